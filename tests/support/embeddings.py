"""A stand-in for an OpenAI-compatible embeddings server: `POST /v1/embeddings` on 127.0.0.1.

Requests as OpenAI takes them (`input` a string or a list of strings, `model`, optional
`dimensions`, `encoding_format` `float` or `base64`: the `openai` library asks for base64 unless
told otherwise); answers in OpenAI's shape (`data[].embedding`, `index`, `model`, `usage`).

The vectors are deterministic and carry meaning a little: feature hashing of the text's words
(lower-cased, a few English suffixes cut off) and of their character trigrams, L2-normalized,
256 dimensions unless `dimensions` asks for others. Texts sharing words or word stems come out
close in cosine; unrelated texts near orthogonal. No model, no network.

    with EmbeddingsServer() as server:
        settings = {"embeddings_base_url": server.base_url, "embeddings_model": "stand-in"}
        server.failing = 503        # every request fails so, until set back to None
        server.requests             # the JSON bodies seen

Free of pytest, so bench/retrieval.py can use it too; `python -m tests.support.embeddings --port N`
serves it until interrupted, and with `--sentence-transformers MODEL` serves a real model's
vectors (for bench/retrieval.py's hybrid figures; bench/README.md says how).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import importlib
import json
import logging
import math
import re
import struct
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PATH = "/v1/embeddings"
DIMENSIONS = 256
TRIGRAM_WEIGHT = 0.5

_WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = ("ingly", "edly", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """A crude stemmer: enough that "grinders" and "grinding" meet "grind"."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    number = int.from_bytes(digest, "big")
    return number % dimensions, (1.0 if number >> 63 else -1.0)


def vector(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """The stand-in's embedding of `text`."""
    values = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        root = stem(word)
        index, sign = _bucket(f"w:{root}", dimensions)
        values[index] += sign
        padded = f"#{root}#"
        for start in range(len(padded) - 2):
            index, sign = _bucket(f"t:{padded[start : start + 3]}", dimensions)
            values[index] += sign * TRIGRAM_WEIGHT
    norm = math.sqrt(sum(value * value for value in values))
    if norm == 0:
        # A text without words: a fixed unit vector, never a zero one (cosine is undefined).
        values[0] = 1.0
        return values
    return [value / norm for value in values]


class EmbeddingsServer:
    """The stand-in on a free loopback port (or `port`), in a thread; a context manager."""

    def __init__(
        self,
        port: int = 0,
        *,
        api_key: str | None = None,
        encoder: Callable[[list[str]], list[list[float]]] | None = None,
    ) -> None:
        # The vectors of a batch of texts: the hashed stand-in's (`vector`) unless given.
        self.encoder = encoder
        # When set, requests without `Authorization: Bearer <api_key>` get a 401.
        self.api_key = api_key
        # An HTTP status every request gets instead of an answer, while set.
        self.failing: int | None = None
        self.failure_message = "the stand-in is failing"
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: without TCP_NODELAY the body waits for
            # the client's delayed ACK (about 40 ms a request).
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {name.lower(): value for name, value in self.headers.items()}
                status, answer = owner.answer(self.path, headers, body)
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.base_url = f"{self.url}/v1"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> EmbeddingsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    @property
    def texts_embedded(self) -> int:
        with self._lock:
            return sum(len(_inputs(request)) for request in self.requests)

    def answer(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        if path.split("?", 1)[0] != PATH:
            return 404, _error("not found", "invalid_request_error")
        try:
            request = json.loads(body or b"{}")
        except json.JSONDecodeError:
            return 400, _error("the body is not JSON", "invalid_request_error")
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
        if self.failing is not None:
            return self.failing, _error(self.failure_message, "server_error")
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, _error("Incorrect API key provided", "invalid_request_error")
        inputs = _inputs(request)
        if not inputs or not all(isinstance(text, str) and text for text in inputs):
            return 400, _error("'input' must be a non-empty string or list of them", "invalid")
        dimensions = request.get("dimensions") or DIMENSIONS
        base64_wanted = request.get("encoding_format") == "base64"
        data = []
        if self.encoder is not None:
            encoded = self.encoder(inputs)
        else:
            encoded = [vector(text, int(dimensions)) for text in inputs]
        for index, values in enumerate(encoded):
            embedding: Any = values
            if base64_wanted:
                embedding = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(_WORD.findall(text)) for text in inputs)
        return 200, {
            "object": "list",
            "data": data,
            "model": request.get("model") or "stand-in",
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _inputs(request: dict[str, Any]) -> list[Any]:
    given = request.get("input")
    return [given] if isinstance(given, str) else list(given or [])


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def wordllama_encoder() -> Callable[[list[str]], list[list[float]]]:
    """The vectors of the small model the `wordllama` package ships inside it (256 dimensions,
    L2-normalized; `pip install -e .[bench]`). Loaded from the package's own folder with
    downloads off: wordllama 0.4 looks for its tokenizer under `tokenizer/` but ships it under
    `tokenizers/`, and would fetch it from the network otherwise."""
    # wordllama's import configures the root logger at INFO: keep the caller's level.
    level = logging.getLogger().level
    package = importlib.import_module("wordllama")
    logging.getLogger().setLevel(level)
    folder = Path(package.__file__).parent
    model = package.WordLlama.load(cache_dir=folder, disable_download=True)

    def encode(texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in model.embed(texts, norm=True)]

    return encode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--sentence-transformers",
        metavar="MODEL",
        help="serve a real model's vectors instead (a sentence-transformers model name or "
        "folder; needs that library, which the project does not install)",
    )
    parser.add_argument(
        "--wordllama", action="store_true", help="serve the model the wordllama package ships"
    )
    args = parser.parse_args()
    encoder = wordllama_encoder() if args.wordllama else None
    if args.sentence_transformers:
        library = importlib.import_module("sentence_transformers")
        model = library.SentenceTransformer(args.sentence_transformers, device="cpu")

        def encoder(texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in model.encode(texts, normalize_embeddings=True)]

    with EmbeddingsServer(args.port, encoder=encoder) as server:
        print(f"embeddings stand-in at {server.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.thread.join()


if __name__ == "__main__":
    main()
