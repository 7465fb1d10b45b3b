"""What the HTTP providers share: one httpx client, a client-side rate limit, and retries of
429/5xx/connection errors with exponential backoff and jitter (tenacity), honouring Retry-After."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from writeup.literature.base import LiteratureError, RateLimiter

RETRY_STATUS = {408, 429, 500, 502, 503, 504}


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class HttpSource:
    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str],
        requests_per_s: float,
        max_retries: int,
        timeout_s: float,
        backoff_s: float = 1.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = httpx.Client(headers=dict(headers), timeout=timeout_s, follow_redirects=True)
        self._limiter = RateLimiter(requests_per_s)
        self._max_retries = max_retries
        self._backoff = wait_exponential_jitter(multiplier=backoff_s, max=60.0)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = exc.retry_after if isinstance(exc, _Retryable) else None
        return min(after, 60.0) if after is not None else self._backoff(state)

    def get_json(self, path: str, params: Mapping[str, Any]) -> Any:
        retrying = Retrying(
            retry=retry_if_exception(lambda e: isinstance(e, _Retryable)),
            stop=stop_after_attempt(self._max_retries + 1),
            wait=self._wait,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._once(path, params)
        except _Retryable as e:
            raise LiteratureError(f"{self.base_url}{path}: {e} (after {self._max_retries} retries)") from None
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _once(self, path: str, params: Mapping[str, Any]) -> Any:
        self._limiter.wait()
        try:
            resp = self._client.get(self.base_url + path, params=dict(params))
        except httpx.TransportError as e:
            raise _Retryable(f"{type(e).__name__}: {e}") from None
        if resp.status_code in RETRY_STATUS:
            after = resp.headers.get("retry-after")
            raise _Retryable(
                f"HTTP {resp.status_code}",
                float(after) if after and after.replace(".", "").isdigit() else None,
            )
        if resp.status_code >= 400:
            raise LiteratureError(f"{self.base_url}{path}: HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            return resp.json()
        except ValueError:
            raise _Retryable("malformed JSON body") from None

    def close(self) -> None:
        self._client.close()
