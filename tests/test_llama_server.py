"""A real small model answers the `openai` client over llama.cpp's HTTP server, offline."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.llama_server import MODEL, smollm_server

pytestmark = pytest.mark.llm_model


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with smollm_server() as url:
        yield url


def test_the_model_answers_and_the_server_counts_tokens(base_url: str) -> None:
    with openai.OpenAI(base_url=base_url, api_key="test", max_retries=0, timeout=120) as client:
        completion = client.chat.completions.create(
            model=MODEL, max_tokens=40, temperature=0,
            messages=[{"role": "system", "content": "Answer in one short sentence."},
                      {"role": "user", "content": "What does a unit test check?"}])
    assert completion.choices[0].message.content.strip()
    assert completion.model == MODEL
    usage = completion.usage
    assert usage.prompt_tokens > 0 and 0 < usage.completion_tokens <= 40
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
