"""The test chat server speaks chat completions as the real `openai` client hears them."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.chat_server import ChatServer, Delay, Malformed, Reply, Status

USER = [{"role": "user", "content": "Fix the failing test\nthen run the suite"}]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as s:
        yield s


def client(server: ChatServer, *, max_retries: int = 0, timeout: float = 5.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=max_retries,
                         timeout=timeout)


def ask(server: ChatServer, *, max_retries: int = 0, timeout: float = 5.0) -> Any:
    with client(server, max_retries=max_retries, timeout=timeout) as c:
        return c.chat.completions.create(model="test-model", messages=USER, max_tokens=50)


def test_a_plain_completion_returns_the_text_and_usage(server: ChatServer) -> None:
    completion = ask(server)
    text = completion.choices[0].message.content
    assert text == "### Task goal\n- summary of 39 chars\n- Fix the failing test"
    assert completion.id.startswith("chatcmpl-") and completion.model == "test-model"
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (10, (len(text) + 3) // 4)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_queued_replies_come_first_then_the_responder() -> None:
    usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    with ChatServer(lambda body: body["messages"][-1]["content"].upper(),
                    script=[Reply("scripted", usage, "length")]) as server:
        first, second = ask(server), ask(server)
    assert first.choices[0].message.content == "scripted"
    assert first.choices[0].finish_reason == "length" and first.usage.total_tokens == 10
    assert second.choices[0].message.content == USER[0]["content"].upper()


def test_requests_are_recorded_with_body_and_authorization(server: ChatServer) -> None:
    ask(server)
    [received] = server.requests
    assert received.method == "POST" and received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer test"
    assert received.body == {"model": "test-model", "messages": USER, "max_tokens": 50}
    assert json.loads(received.raw) == received.body


def test_a_rate_limit_is_retried_by_the_client(server: ChatServer) -> None:
    server.push(Status(429, headers={"retry-after": "0"}), Reply("after the wait"))
    started = time.monotonic()
    completion = ask(server, max_retries=2)
    assert completion.choices[0].message.content == "after the wait"
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "1"]
    assert server.requests[0].body == server.requests[1].body
    # "retry-after: 0" is not honoured as zero: the client backs off its own 0.375-0.5 s.
    assert time.monotonic() - started < 2


def test_server_errors_exhaust_the_retries(server: ChatServer) -> None:
    server.push(*[Status(500, headers={"retry-after-ms": "1"})] * 3)
    with pytest.raises(openai.InternalServerError) as caught:
        ask(server, max_retries=2)
    assert caught.value.status_code == 500 and "Internal Server Error" in caught.value.message
    assert len(server.requests) == 3


def test_a_delay_past_the_timeout_times_out_and_the_server_carries_on(
        server: ChatServer, capfd: pytest.CaptureFixture[str]) -> None:
    server.push(Delay(1.0))
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        ask(server, timeout=0.2)
    assert time.monotonic() - started < 0.9
    time.sleep(1.3 - (time.monotonic() - started))  # the answer meets a closed connection
    assert ask(server).choices[0].message.content.startswith("### Task goal")
    assert server.errors == []
    assert capfd.readouterr().err == ""


def test_shutdown_is_prompt_while_a_delay_sleeps() -> None:
    with ChatServer(script=[Delay(30)]) as server:
        with pytest.raises(openai.APITimeoutError):
            ask(server, timeout=0.2)
        started = time.monotonic()
    assert time.monotonic() - started < 1


def test_a_delay_can_end_in_an_error() -> None:
    with ChatServer(script=[Delay(0.01, Status(503))]) as server:
        with pytest.raises(openai.InternalServerError) as caught:
            ask(server)
    assert caught.value.status_code == 503


def test_a_body_that_is_not_json_escapes_as_a_json_error(server: ChatServer) -> None:
    # The client does not wrap it in an openai.APIError: a caller must catch ValueError too.
    server.push(Malformed(b"not json"))
    with pytest.raises(json.JSONDecodeError):
        ask(server)


def test_json_without_choices_parses_into_an_unusable_completion(server: ChatServer) -> None:
    # The client does not validate: the missing fields come back as None.
    server.push(Malformed(b'{"id": "chatcmpl-broken"}'))
    completion = ask(server)
    assert completion.id == "chatcmpl-broken"
    assert completion.choices is None and completion.usage is None


def test_a_body_that_is_not_json_typed_comes_back_as_a_string(server: ChatServer) -> None:
    server.push(Malformed(b"<html>proxy error</html>", content_type="text/html"))
    assert ask(server) == "<html>proxy error</html>"


def test_a_failing_responder_is_a_500_with_its_cause_kept() -> None:
    def broken(body: dict) -> str:
        raise KeyError("boom")

    with ChatServer(broken) as server:
        with pytest.raises(openai.InternalServerError, match="boom"):
            ask(server)
    assert [type(e) for e in server.errors] == [KeyError]


def test_the_unversioned_path_answers_and_other_paths_are_404(server: ChatServer) -> None:
    root = server.base_url.removesuffix("/v1")
    server.push(Reply("kept for the chat request"))
    request = urllib.request.Request(f"{server.base_url}/embeddings", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 404
    with openai.OpenAI(base_url=root, api_key="test", max_retries=0, timeout=5) as c:
        completion = c.chat.completions.create(model="m", messages=USER)
    assert completion.choices[0].message.content == "kept for the chat request"
    assert [r.path for r in server.requests] == ["/v1/embeddings", "/chat/completions"]
