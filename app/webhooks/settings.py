"""The webhook settings, read once from the environment (INFRAGRAPH_WEBHOOK_*)."""

from collections.abc import Mapping
from dataclasses import dataclass


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in ("1", "true", "yes")


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value


@dataclass(frozen=True)
class WebhookSettings:
    # http:// URLs, and loopback, private and link-local destinations: for tests and
    # receivers on a trusted network only (docs/webhooks.md, "Safety")
    allow_http: bool = False
    allow_private: bool = False
    timeout_s: float = 10.0  # one attempt, connecting to the end of the answer
    retry_min_s: float = 10.0  # the first retry's delay; doubling up to retry_max_s
    retry_max_s: float = 3600.0
    retry_for_s: float = 86400.0  # after this long a delivery that fails is dead
    poll_s: float = 5.0  # the worker looks for due deliveries at least this often
    lock_held_s: float = 3600.0  # a lock held this long is a `lock.held` event
    worker: bool = True  # this process delivers (INFRAGRAPH_WEBHOOK_WORKER=0: it does not)

    @property
    def lease_s(self) -> float:
        """How long a claimed delivery stays with its sender: past any attempt's end, so
        another process takes it only when the sender died."""
        return 2 * self.timeout_s + 5

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "WebhookSettings":
        prefix = "INFRAGRAPH_WEBHOOK_"
        return cls(
            allow_http=_flag(env, prefix + "ALLOW_HTTP"),
            allow_private=_flag(env, prefix + "ALLOW_PRIVATE"),
            timeout_s=_seconds(env, prefix + "TIMEOUT_S", cls.timeout_s),
            retry_min_s=_seconds(env, prefix + "RETRY_MIN_S", cls.retry_min_s),
            retry_max_s=_seconds(env, prefix + "RETRY_MAX_S", cls.retry_max_s),
            retry_for_s=_seconds(env, prefix + "RETRY_FOR_S", cls.retry_for_s),
            poll_s=_seconds(env, prefix + "POLL_S", cls.poll_s),
            lock_held_s=60 * _seconds(env, prefix + "LOCK_HELD_MINUTES", cls.lock_held_s / 60),
            worker=env.get(prefix + "WORKER", "1").strip().lower() not in ("0", "false", "no"),
        )
