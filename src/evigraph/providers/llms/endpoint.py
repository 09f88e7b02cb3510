"""Where an OpenAI-compatible server's chat and model list live, from the base URL a user gives.

One base URL covers OpenAI (`https://api.openai.com/v1`), Ollama (`http://localhost:11434/v1`),
vLLM and llama.cpp servers (`http://host:8000/v1`) and Azure deployments
(`https://NAME.openai.azure.com/openai/deployments/DEPLOYMENT?api-version=...`), whose query
must follow every path and whose key goes in an `api-key` header, not `Authorization`.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from evigraph.errors import LLMConfigurationError
from evigraph.masking import mask_credentials

_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
_URL_KEYS = frozenset({"api-key", "api_key", "apikey"})
EXAMPLE_URLS = "e.g. http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM), https://api.openai.com/v1"


@dataclass(frozen=True)
class Endpoint:
    """The URLs of one server, and how it wants its key."""

    base_url: str
    chat_url: str
    models_url: str
    azure: bool
    """Azure-style: the key goes in an `api-key` header, the model is the URL's deployment."""
    deployment: str | None
    url_key: str | None
    """A key given in the URL's query (`?api-key=...`): kept there for the server, masked everywhere."""

    def __repr__(self) -> str:  # the URLs may carry the key in their query
        return f"Endpoint({self.display!r}, azure={self.azure})"

    @property
    def display(self) -> str:
        """The base URL as errors and logs show it: no key, no password."""
        return mask_credentials(self.base_url, (self.url_key,) if self.url_key else ())

    @classmethod
    def parse(cls, base_url: str) -> Endpoint:
        """Refuses what is not an http(s) URL with a host, naming the setting and an example."""
        text = base_url.strip()
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 - raises ValueError on a port that is not a number
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            shown = mask_credentials(text)
            raise LLMConfigurationError(
                f"the LLM base URL {shown!r} is not an http(s) URL with a host",
                f"set EVIGRAPH_LLM_BASE_URL to the server's API root, {EXAMPLE_URLS}",
            )
        path = parts.path.rstrip("/")
        if path.endswith("/chat/completions"):  # the full endpoint pasted from a curl example
            path = path[: -len("/chat/completions")]
        host = parts.hostname.lower()
        azure = host.endswith(_AZURE_HOSTS) or "/openai/deployments/" in path
        deployment = None
        if "/deployments/" in path:
            deployment = path.split("/deployments/", 1)[1].split("/", 1)[0] or None
        models_path = path.split("/deployments/", 1)[0] if deployment else path
        url_key = next((v for k, v in parse_qsl(parts.query) if k.lower() in _URL_KEYS and v), None)

        def url(p: str) -> str:
            return urlunsplit((parts.scheme, parts.netloc, p, parts.query, ""))

        return cls(
            base_url=url(path),
            chat_url=url(f"{path}/chat/completions"),
            models_url=url(f"{models_path}/models"),
            azure=azure,
            deployment=deployment,
            url_key=url_key,
        )
