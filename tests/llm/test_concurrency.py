"""The concurrency limit, seen from the server: never more requests in flight than allowed."""

from __future__ import annotations

import asyncio
import gc
import time

from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, chat_reply, stream_reply

from evigraph.providers.llms import Message, OpenAICompatibleLLM, Usage


async def test_at_most_concurrency_requests_in_flight(replay_server: ReplayServer) -> None:
    replay_server.queue(*[chat_reply(str(i), delay=0.3) for i in range(6)])
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, concurrency=2) as llm:
        started = time.monotonic()
        results = await asyncio.gather(*(llm.chat([Message.user(str(i))]) for i in range(6)))
        elapsed = time.monotonic() - started
    assert sorted(r.text for r in results) == [str(i) for i in range(6)]
    assert replay_server.max_in_flight == 2
    assert elapsed >= 0.85  # three waves of two


async def test_the_server_does_see_parallel_requests(replay_server: ReplayServer) -> None:
    """The measurement itself: without a tight limit the calls overlap."""
    replay_server.queue(*[chat_reply(str(i), delay=0.3) for i in range(4)])
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, concurrency=4) as llm:
        await asyncio.gather(*(llm.chat([Message.user(str(i))]) for i in range(4)))
    assert replay_server.max_in_flight == 4


async def test_streams_hold_their_slot_until_they_end(replay_server: ReplayServer) -> None:
    replay_server.queue(*[stream_reply(["a", "b"], event_delay=0.15) for _ in range(3)])
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, concurrency=1) as llm:

        async def read() -> str:
            async with llm.stream([Message.user("q")]) as stream:
                return "".join([d async for d in stream])

        assert list(await asyncio.gather(read(), read(), read())) == ["ab"] * 3
    assert replay_server.max_in_flight == 1


def test_one_client_across_event_loops(replay_server: ReplayServer) -> None:
    """Scripts call through `asyncio.run` once per call (as `evigraph.sync` does): the client's
    connections and slots follow the running loop instead of failing on the first one's."""
    replay_server.queue(chat_reply("one", prompt_tokens=3, completion_tokens=1), chat_reply("two", prompt_tokens=3))
    llm = OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, concurrency=1)
    assert asyncio.run(llm.chat([Message.user("1")])).text == "one"
    assert asyncio.run(llm.chat([Message.user("2")])).text == "two"
    asyncio.run(llm.aclose())
    gc.collect()
    assert llm.usage == Usage(input_tokens=6, output_tokens=8, calls=2)
