"""Settings, read from the environment (prefix CONTENTPLATFORM_) and an optional .env file."""

from __future__ import annotations

from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from cryptography.fernet import Fernet
from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

# The package, and the checkout it runs from when installed editable (`pip install -e`, as dev.py
# does): the directory holding pyproject.toml, with the package in its src/.
_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent.parent


def default_data_dir() -> Path:
    """Where data lives when CONTENTPLATFORM_DATA_DIR is not set: `.contentplatform` in the
    checkout when the package runs from one, else the user's data directory; absolute either
    way, so every command (the service, `dev-token`) finds the same one from any directory."""
    if _PACKAGE.parent.name == "src" and (_CHECKOUT / "pyproject.toml").is_file():
        return _CHECKOUT / ".contentplatform"
    return Path(platformdirs.user_data_dir("contentplatform", appauthor=False))


class Environment(StrEnum):
    local = "local"
    staging = "staging"
    production = "production"


def _check_fernet_keys(keys: str) -> None:
    """Each comma-separated key must be a Fernet key (32 bytes, url-safe base64)."""
    names = [key.strip() for key in keys.split(",") if key.strip()]
    if not names:
        raise ValueError("CONTENTPLATFORM_PUBLISHER_CREDENTIALS_KEYS holds no key")
    for index, key in enumerate(names, start=1):
        try:
            Fernet(key)
        except ValueError:
            raise ValueError(
                f"CONTENTPLATFORM_PUBLISHER_CREDENTIALS_KEYS: key {index} is not a Fernet key "
                "(32 url-safe base64-encoded bytes)"
            ) from None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CONTENTPLATFORM_", env_file=".env", extra="ignore", frozen=True
    )

    env: Environment = Environment.local
    data_dir: Path = Field(default_factory=default_data_dir)
    host: str = "127.0.0.1"
    port: int = 8000
    # Where others reach this service (https://api.example.com): the links to stored files it
    # hands to publishing targets, which fetch them from there (a featured image on local
    # storage, for Shopify and Webflow). Unset: http://{host}:{port}.
    public_url: str | None = Field(None, pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$")

    # Persistence. Default: SQLite file in the data directory.
    database_url: str | None = None
    # DBOS system database. Default: SQLite beside ours, or `<database>_dbos` on the same
    # PostgreSQL server when ours is PostgreSQL.
    dbos_database_url: str | None = None
    # Which process this is to DBOS: at launch a process recovers the workflows its id left
    # pending. One process (the default) is "local"; several processes sharing a system database
    # each need their own id that stays the same across restarts (see README).
    executor_id: str | None = Field(None, min_length=1, max_length=128)
    # Redis for state shared by several processes (rate limits; later cache and streams).
    redis_url: str | None = None
    redis_prefix: str = "contentplatform:"
    # Database connections each process keeps open, and how many more a burst beyond them may
    # open (and close again).
    database_pool_size: int = Field(20, ge=1, le=1000)
    database_max_overflow: int = Field(10, ge=0, le=1000)
    # Connections DBOS keeps to its system database (its `sys_db_pool_size`; DBOS's own default).
    dbos_pool_size: int = Field(20, ge=2, le=1000)

    # Identity provider. Required outside `local`.
    jwks_url: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256", "EdDSA"])
    jwt_leeway_seconds: int = 30
    jwks_cache_seconds: int = 300
    jwks_min_refetch_seconds: int = 10
    # Verified tokens a process remembers (until their expiry, and no longer than the keys are
    # cached), so a token is verified once rather than on every request; 0 verifies every time.
    token_cache_size: int = Field(10_000, ge=0, le=1_000_000)

    # Requests per principal (user in a tenant) and per client address on public paths.
    rate_limit: str = "600/minute"
    rate_limit_public: str = "120/minute"

    reconcile_interval_seconds: float = 30
    # How often each durable queue looks for work any process enqueued (seconds): a queued
    # workflow (a generation run, a crawl, a webhook delivery) waits up to this long to start.
    queue_poll_seconds: float = Field(0.5, ge=0.01, le=60)
    # At shutdown, how long workflows in flight may run to their end (seconds); what is still
    # running then resumes on the next start, as after a crash.
    shutdown_grace_seconds: int = Field(10, ge=0, le=300)
    # The events' dispatcher wakes at once for events this process commits, and looks for other
    # processes' this often (seconds).
    events_poll_seconds: float = Field(1.0, gt=0, le=60)
    # The job scheduler ticks this often (seconds, 1-59; 0 turns it off in this deployment).
    scheduler_interval_seconds: int = Field(5, ge=0, le=59)
    # The most jobs one tick starts; the rest wait for the next tick.
    scheduler_batch: int = Field(10_000, ge=1)
    # Jobs of different tenants a tick starts at once on PostgreSQL (SQLite: one at a time).
    scheduler_concurrency: int = Field(4, ge=1, le=32)
    # Object storage: local files in the data directory by default, or s3://bucket/prefix
    # (credentials and endpoint from the usual AWS_* variables, e.g. AWS_ENDPOINT_URL).
    storage_url: str | None = None
    max_upload_bytes: int = 50 * 1024 * 1024
    upload_url_ttl_seconds: int = 900

    # Credits: the monthly grant per tenant (generous in local when unset) and how long a
    # reservation is held before the reconciler releases it.
    credits_monthly_grant: int | None = None
    credit_reservation_ttl_seconds: int = 3600

    # Ingestion: chunk size in tokens, overlap, and after how long `processing` counts as stalled.
    chunk_tokens: int = 512
    chunk_overlap_tokens: int = 64
    ingest_stall_seconds: float = 1800
    # Worker processes that extract and chunk uploaded files (0: a thread of this process).
    ingest_processes: int = Field(1, ge=0, le=64)
    documents_list_cache_seconds: int = 60

    # The language model: `offline` (embedded, deterministic, no network) or `openai`, any
    # OpenAI-compatible chat-completions server (OpenAI, Azure, vLLM, Ollama, llama.cpp, LiteLLM).
    llm_provider: Literal["offline", "openai"] = "offline"
    llm_base_url: str | None = None  # None: OpenAI's own API
    llm_api_key: SecretStr | None = None
    llm_model: str = "gpt-4o-mini"
    llm_timeout_seconds: float = 60
    # Retries of 429, 5xx, timeouts and dropped connections, with exponential backoff that honours
    # Retry-After.
    llm_max_retries: int = 3

    # Embeddings, for hybrid search: any OpenAI-compatible `/v1/embeddings` server (OpenAI, Ollama,
    # vLLM, llama.cpp, ...). None (the default) turns them off: search is full text alone. When
    # set, `embeddings_model` is required; `embeddings_dimensions` is sent as `dimensions` (for
    # models that can shorten their vectors). Texts go in batches of `embeddings_batch_size`.
    embeddings_base_url: str | None = None
    embeddings_api_key: SecretStr | None = None
    embeddings_model: str | None = Field(None, min_length=1)
    embeddings_dimensions: int | None = Field(None, ge=1, le=16_000)
    embeddings_timeout_seconds: float = Field(30, gt=0)
    embeddings_max_retries: int = Field(2, ge=0, le=10)
    embeddings_batch_size: int = Field(64, ge=1, le=2048)

    # Generation: the credits held for one article (the most it can cost; see README), and after
    # how long a run still running counts as stalled and is failed.
    generation_credit_hold: int = 40
    generation_stall_seconds: float = 1800

    # Chat: the credits held for one answer (the most it can cost; see README), and after how
    # long an answer still streaming counts as stalled and is failed.
    chat_credit_hold: int = Field(10, ge=1, le=1000)
    chat_stall_seconds: float = Field(300, gt=0)

    # Live generation runs: a regenerated draft costs 1 credit per started this many words
    # rewritten (held like an article: generation_credit_hold, the most it can cost), and
    # generation.suggestTopics may be called this often per tenant.
    generation_regenerate_words_per_credit: int = Field(100, ge=1)
    generation_topics_rate_limit: str = "20/hour"

    # Publishing. Credentials of publisher connections are encrypted with these Fernet keys
    # (comma-separated; the first encrypts, all decrypt, so a key can be rotated). Required
    # outside `local`; in `local` a key file in the data directory is made on first use.
    publisher_credentials_keys: SecretStr | None = None
    # Requests to user-supplied URLs (CMS sites, webhooks): https only and public addresses only,
    # unless these allow http and loopback (local development and tests; never in production).
    outbound_allow_http: bool = False
    outbound_allow_loopback: bool = False
    outbound_timeout_seconds: float = 30
    outbound_max_response_bytes: int = 5 * 1024 * 1024
    # Tries of one publish attempt on transient failures, and the first backoff (doubling,
    # with jitter; a target's Retry-After wins when longer).
    publish_max_tries: int = Field(5, ge=1, le=20)
    publish_retry_seconds: float = Field(2.0, ge=0)
    # Outbound webhooks (webhooks/): the wait before each attempt of a delivery, in seconds (the
    # first is the first attempt's: keep it 0, as that wait holds a place of the delivery queue;
    # each later one gets +-20 % jitter, a receiver's longer Retry-After wins), so its length is
    # the number of attempts and its sum the retry window (about a day) after which a failing
    # endpoint is disabled; and how long an attempt may take.
    webhook_retry_seconds: list[Annotated[float, Field(ge=0, le=86_400)]] = Field(
        default_factory=lambda: [0.0, 5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0],
        min_length=1,
        max_length=20,
    )
    webhook_timeout_seconds: float = Field(15, gt=0, le=60)

    # Event streams (SSE): how long a stream's log is kept after its last event, the keep-alive
    # comment's interval, and how often a reader polls the database for another process's events.
    stream_retention_hours: float = Field(24, gt=0)
    stream_ping_seconds: float = Field(15, gt=0)
    stream_poll_seconds: float = Field(0.2, gt=0, le=5)

    # How long a resolved tenant membership is reused by a process before it is read again (a
    # role change or removal retires it at once, on every process when Redis is configured).
    access_cache_seconds: float = 30

    # The identity provider's Backend API (Clerk-shaped: organizations, memberships,
    # invitations) and its secret key: team writes go there first. Unset: team writes answer 503.
    idp_api_url: str | None = None
    idp_secret_key: SecretStr | None = None
    idp_timeout_seconds: float = Field(10, gt=0, le=120)
    # The signing secret (`whsec_...`) of the identity provider's webhooks (Svix): unset, every
    # identity event is refused.
    idp_webhook_secret: SecretStr | None = None
    # Origins an invitation's redirectUrl may point to (empty: any https URL).
    team_redirect_origins: list[str] = Field(default_factory=list)
    # How often an admin may run team.sync per tenant.
    team_sync_rate_limit: str = "1/minute"

    # Billing on Stripe (billing/): the secret API key (unset: billing is not configured, every
    # tenant is on the free plan and checkout/portal answer 503), the webhook endpoint's signing
    # secret (`whsec_...`; unset: every payment event is refused), the API base the `stripe`
    # library calls (unset: Stripe's own; the tests point it at a stand-in), and the mode whose
    # events are accepted (an event's `livemode` must match).
    stripe_secret_key: SecretStr | None = None
    stripe_webhook_secret: SecretStr | None = None
    stripe_api_base: str | None = None
    stripe_livemode: bool = False
    stripe_timeout_seconds: float = Field(20, gt=0, le=120)
    # Origins a checkout's or portal's return URL may point to (empty: those of
    # team_redirect_origins; both empty: any https URL).
    billing_redirect_origins: list[str] = Field(default_factory=list)
    # The free plan's limits, as JSON: a limit's key (members, documents, storage_bytes,
    # active_jobs, publishers, webhook_endpoints, api_keys, crawl_pages: pages per website crawl)
    # -> a number, or null for unlimited.
    # A key left out is unlimited, e.g. {"members": 3, "active_jobs": 2}.
    free_plan_limits: dict[str, Annotated[int, Field(ge=0)] | None] = Field(default_factory=dict)

    # Stock photos (media/): Unsplash's API (or a server speaking it: the tests' stand-in) and
    # the application's access key, sent as `Authorization: Client-ID <key>`. Unset, the
    # provider is not configured: stock search and import answer 400 naming `provider`. The
    # app's name goes into the `utm_source` of every attribution link, as Unsplash requires.
    # Requests go through the outbound guard (https and public addresses, unless the
    # OUTBOUND_ALLOW_* settings allow more), each within the timeout; a search is kept this
    # long (in the shared cache) for everyone asking the same.
    stock_unsplash_base_url: str = "https://api.unsplash.com"
    stock_unsplash_access_key: SecretStr | None = None
    stock_unsplash_app_name: str = Field("contentplatform", min_length=1, max_length=100)
    stock_timeout_seconds: float = Field(10, gt=0, le=120)
    stock_search_cache_seconds: float = Field(600, ge=0, le=86_400)

    # Feature flags (features/flags.py) as the operator sets them for every organization, as
    # JSON: a flag's key -> true/false (on/off for all) or a percentage 0-100 (on for that share
    # of organizations, chosen by a stable hash), e.g. {"chat": false, "topic_suggestions": 25}.
    # An organization's override and its own opt-in still win; unknown keys are refused at start.
    features: dict[str, bool | Annotated[int, Field(ge=0, le=100)]] = Field(default_factory=dict)

    log_level: str = "INFO"
    log_json: bool | None = None

    build_commit: str = "unknown"
    build_time: str | None = None

    @model_validator(mode="after")
    def _identity_provider_outside_local(self) -> Settings:
        if self.env is not Environment.local and not (self.jwks_url and self.jwt_issuer):
            raise ValueError(
                f"CONTENTPLATFORM_JWKS_URL and CONTENTPLATFORM_JWT_ISSUER are required "
                f"when CONTENTPLATFORM_ENV={self.env.value}"
            )
        if self.env is not Environment.local and self.publisher_credentials_keys is None:
            raise ValueError(
                f"CONTENTPLATFORM_PUBLISHER_CREDENTIALS_KEYS is required when "
                f"CONTENTPLATFORM_ENV={self.env.value} (Fernet keys, comma-separated)"
            )
        if self.publisher_credentials_keys is not None:
            _check_fernet_keys(self.publisher_credentials_keys.get_secret_value())
        if self.jwks_url and not self.jwt_issuer:
            raise ValueError("CONTENTPLATFORM_JWT_ISSUER is required with CONTENTPLATFORM_JWKS_URL")
        if self.embeddings_base_url and not self.embeddings_model:
            raise ValueError(
                "CONTENTPLATFORM_EMBEDDINGS_MODEL is required with "
                "CONTENTPLATFORM_EMBEDDINGS_BASE_URL"
            )
        limit_keys = {
            "members",
            "documents",
            "storage_bytes",
            "active_jobs",
            "publishers",
            "webhook_endpoints",
            "api_keys",
            "crawl_pages",
        }
        if unknown := set(self.free_plan_limits) - limit_keys:
            raise ValueError(
                f"CONTENTPLATFORM_FREE_PLAN_LIMITS names unknown limits {sorted(unknown)}; "
                f"known: {sorted(limit_keys)}"
            )
        allowed = {"RS256", "ES256", "EdDSA"}
        if not set(self.jwt_algorithms) <= allowed:
            raise ValueError(f"jwt_algorithms must be a subset of {sorted(allowed)}")
        return self

    @property
    def public_base_url(self) -> str:
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/")

    @property
    def billing_configured(self) -> bool:
        return self.stripe_secret_key is not None

    @property
    def monthly_credit_grant(self) -> int:
        if self.credits_monthly_grant is not None:
            return self.credits_monthly_grant
        return 1_000_000 if self.is_local else 1_000

    @property
    def resolved_storage_url(self) -> str:
        return self.storage_url or (self.data_dir / "objects").resolve().as_uri()

    @property
    def embeddings_enabled(self) -> bool:
        return self.embeddings_base_url is not None

    @property
    def is_local(self) -> bool:
        return self.env is Environment.local

    @property
    def logs_as_json(self) -> bool:
        return self.log_json if self.log_json is not None else not self.is_local

    @cached_property
    def resolved_database_url(self) -> str:
        if self.database_url:
            url = make_url(self.database_url)
            driver = {"postgresql": "postgresql+asyncpg", "sqlite": "sqlite+aiosqlite"}
            if url.drivername in driver:
                url = url.set(drivername=driver[url.drivername])
            return url.render_as_string(hide_password=False)
        return f"sqlite+aiosqlite:///{(self.data_dir / 'contentplatform.db').resolve()}"

    @cached_property
    def resolved_dbos_database_url(self) -> str:
        if self.dbos_database_url:
            return self.dbos_database_url
        url = make_url(self.resolved_database_url)
        if url.get_backend_name() == "postgresql":
            url = url.set(drivername="postgresql", database=f"{url.database}_dbos")
            return url.render_as_string(hide_password=False)
        return f"sqlite:///{(self.data_dir / 'dbos.sqlite').resolve()}"

    @property
    def is_sqlite(self) -> bool:
        return make_url(self.resolved_database_url).get_backend_name() == "sqlite"

    def ensure_data_dir(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return self.data_dir
