"""Settings, read from the environment (prefix CONTENTPLATFORM_) and an optional .env file."""

from __future__ import annotations

import re
import ssl
from email.utils import getaddresses
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from cryptography.fernet import Fernet
from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

# The package, and the checkout it runs from when installed editable (`pip install -e`, as dev.py
# does): the directory holding pyproject.toml, with the package in its src/.
_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent.parent
# An origin (RFC 6454) as a browser's Origin header carries it: scheme, host, optional port.
_ORIGIN = re.compile(r"https?://(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9.-]*[a-z0-9])?)(:[0-9]{1,5})?")


def default_data_dir() -> Path:
    """Where data lives when CONTENTPLATFORM_DATA_DIR is not set: `.contentplatform` in the
    checkout when the package runs from one, else the user's data directory; absolute either
    way, so every command (the service, `dev-token`) finds the same one from any directory."""
    if _PACKAGE.parent.name == "src" and (_CHECKOUT / "pyproject.toml").is_file():
        return _CHECKOUT / ".contentplatform"
    return Path(platformdirs.user_data_dir("contentplatform", appauthor=False))


def default_lighthouse_path() -> Path:
    """The Lighthouse CLI tools/lighthouse pins, in the checkout the package runs from."""
    return _CHECKOUT / "tools/lighthouse/node_modules/.bin/lighthouse"


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


def _check_ca_file(path: Path) -> None:
    """The file must hold at least one CA certificate in PEM that OpenSSL can load."""
    try:
        ssl.create_default_context(cafile=None).load_verify_locations(cafile=str(path))
    except (OSError, ssl.SSLError) as error:
        raise ValueError(
            f"CONTENTPLATFORM_OUTBOUND_CA_FILE ({path}) is not a readable PEM file of CA "
            f"certificates: {error}"
        ) from None


# The vectors' weight in hybrid search by default (see `embeddings_weight`): 0, full text alone.
# Measured with the small real model wordllama ships (bench/README.md, "Hybrid search"): every
# weight above 0 ranked below full text alone on the generated corpus, however small (from 0.01,
# where it only breaks full text's near-ties), though 0.05-0.3 ranked above it on the real one.
EMBEDDINGS_WEIGHT = 0.0

# The limits a plan sets (billing's LIMIT_KEYS), each a count (storage in bytes) or None for
# unlimited; `crawl_pages` is the pages one website crawl fetches at most (a cap on each run, not
# a count kept).
PLAN_LIMIT_KEYS = (
    "members",
    "documents",
    "storage_bytes",
    "active_jobs",
    "publishers",
    "webhook_endpoints",
    "api_keys",
    "crawl_pages",
)


class Settings(BaseSettings):
    """Every setting, read from CONTENTPLATFORM_<NAME> (or a `.env` file in the working
    directory). Each field's docstring is its description in docs/reference/configuration.md,
    which `contentplatform maps` writes from this class."""

    model_config = SettingsConfigDict(
        env_prefix="CONTENTPLATFORM_",
        env_file=".env",
        extra="ignore",
        frozen=True,
        use_attribute_docstrings=True,
    )

    env: Environment = Environment.local
    """Where this service runs. `local` mints its own keys and tokens (`dev-token`), migrates
    at start and is generous with credits; `staging` and `production` require the identity
    provider (JWKS_URL, JWT_ISSUER) and PUBLISHER_CREDENTIALS_KEYS."""
    data_dir: Path = Field(default_factory=default_data_dir)
    """Where local data lives: the SQLite databases, stored files, local keys. Unset:
    `.contentplatform` in the checkout when the package runs from one, else the user's data
    directory."""
    host: str = "127.0.0.1"
    """The address `serve` listens on (its `--host` wins)."""
    port: int = 8000
    """The port `serve` listens on (its `--port` wins)."""
    public_url: str | None = Field(None, pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$")
    """Where others reach this service (https://api.example.com): the links to stored files it
    hands to publishing targets, which fetch them from there (a featured image on local
    storage, for Shopify and Webflow). Unset: http://{host}:{port}."""
    api_contact_name: str = Field("Content Platform API", min_length=1, max_length=200)
    """Who answers for this API, in its document's `info.contact` (the docs pages show it)."""
    api_contact_email: str | None = Field(None, pattern=r"^[^\s@]+@[^\s@]+$", max_length=254)
    """The contact's email address, in the API document's `info.contact`."""
    api_contact_url: str | None = Field(None, pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$")
    """The contact's web page, in the API document's `info.contact`."""

    # Persistence.
    database_url: str | None = None
    """The database (`postgresql://...` or `sqlite:///...`; the async drivers are chosen
    for them). Unset: a SQLite file in the data directory."""
    dbos_database_url: str | None = None
    """DBOS's system database. Unset: SQLite beside ours, or `<database>_dbos` on the same
    PostgreSQL server when ours is PostgreSQL."""
    executor_id: str | None = Field(None, min_length=1, max_length=128)
    """Which process this is to DBOS: at launch a process recovers the workflows its id left
    pending. One process (the default) is "local"; several processes sharing a system database
    each need their own id that stays the same across restarts (docs/operators/workers.md)."""
    redis_url: str | None = None
    """Redis for state shared by several processes (rate limits, the cache, stream wake-ups,
    access revocations). Unset: each process keeps its own."""
    redis_prefix: str = "contentplatform:"
    """The prefix of every Redis key this service writes (several services may share a Redis)."""
    database_pool_size: int = Field(20, ge=1, le=1000)
    """Database connections each process keeps open."""
    database_max_overflow: int = Field(10, ge=0, le=1000)
    """How many more connections than the pool a burst may open (and close again)."""
    database_pool_timeout_seconds: float = Field(10, gt=0, le=300)
    """How long a request waits for a free connection when all are busy before it is answered
    503 with Retry-After (SQLAlchemy's own default is 30 s)."""
    database_work_patience_seconds: float = Field(600, gt=0, le=86400)
    """How long background work (durable steps, the scheduler, an answer writing its stream)
    waits in all for a free connection when all are busy. Nobody is answered 503 for it: it
    queues, a pool's timeout at a time, and fails only after this long."""
    dbos_pool_size: int = Field(20, ge=2, le=1000)
    """Connections DBOS keeps to its system database (its `sys_db_pool_size`; DBOS's own
    default)."""

    # Identity provider. Required outside `local`.
    jwks_url: str | None = None
    """The identity provider's JWKS document, whose keys verify session tokens. Required
    outside `local`."""
    jwt_issuer: str | None = None
    """The `iss` a token must carry. Required outside `local` and with JWKS_URL."""
    jwt_audience: str | None = None
    """The `aud` a token must carry. Unset: the audience is not checked."""
    jwt_algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256", "EdDSA"])
    """The signature algorithms a token may use (a subset of RS256, ES256, EdDSA)."""
    jwt_leeway_seconds: int = 30
    """How far clocks may disagree when a token's expiry and not-before are checked."""
    jwks_cache_seconds: int = 300
    """How long the identity provider's keys are kept before they are fetched again."""
    jwks_min_refetch_seconds: int = 10
    """The least time between two fetches of the keys when a token names an unknown key: neither
    forged key ids nor an outage at the provider turn into a flood of fetches."""
    token_cache_size: int = Field(10_000, ge=0, le=1_000_000)
    """Verified tokens a process remembers (until their expiry, and no longer than the keys are
    cached), so a token is verified once rather than on every request; 0 verifies every time."""

    rate_limit: str = "600/minute"
    """Requests per principal (a user in a tenant), as `<count>/<period>` (second, minute, hour,
    day)."""
    rate_limit_public: str = "120/minute"
    """Requests per client address on public paths, as `<count>/<period>`."""

    reconcile_interval_seconds: float = 30
    """How often the reconciler restarts durable work whose workflow went missing and fails work
    whose workflow failed."""
    queue_poll_seconds: float = Field(0.5, ge=0.01, le=60)
    """How often each durable queue looks for work any process enqueued: a queued workflow (a
    generation run, a crawl, a webhook delivery) waits up to this long to start."""
    shutdown_grace_seconds: int = Field(10, ge=0, le=300)
    """At shutdown, how long workflows in flight may run to their end; what is still running
    then resumes on the next start, as after a crash."""
    events_poll_seconds: float = Field(1.0, gt=0, le=60)
    """The events' dispatcher wakes at once for events this process commits, and looks for
    other processes' this often."""
    scheduler_interval_seconds: int = Field(5, ge=0, le=59)
    """The job scheduler ticks this often (0 turns it off in this deployment)."""
    scheduler_batch: int = Field(10_000, ge=1)
    """The most jobs one tick starts; the rest wait for the next tick."""
    scheduler_concurrency: int = Field(4, ge=1, le=32)
    """Jobs of different tenants a tick starts at once on PostgreSQL (SQLite: one at a time)."""
    storage_url: str | None = None
    """Object storage: `s3://bucket/prefix` (credentials and endpoint from the usual AWS_*
    variables, e.g. AWS_ENDPOINT_URL). Unset: local files in the data directory."""
    max_upload_bytes: int = 50 * 1024 * 1024
    """The largest file an upload URL accepts (a kind of file may allow less)."""
    max_request_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    """The largest request body of an operation (a draft's million characters of HTML as JSON,
    with room to spare), refused with 413 as it streams in; uploads keep MAX_UPLOAD_BYTES."""
    max_inbound_event_bytes: int = Field(1024 * 1024, ge=1024)
    """The largest body of an inbound provider event (/api/webhooks/*), refused with 413 as it
    streams in."""
    upload_url_ttl_seconds: int = 900
    """How long a signed upload URL stays valid."""

    # Credits.
    credits_monthly_grant: int | None = None
    """The credits each tenant is granted a month. Unset: 1,000,000 in `local`, 1,000
    elsewhere."""
    credit_reservation_ttl_seconds: int = 3600
    """How long a reservation of credits is held before the reconciler releases it."""

    # Ingestion.
    chunk_tokens: int = 512
    """The size of a document's chunks, in tokens."""
    chunk_overlap_tokens: int = 64
    """The tokens two neighbouring chunks share."""
    ingest_stall_seconds: float = 1800
    """After how long a document still `processing` counts as stalled and is failed."""
    ingest_processes: int = Field(1, ge=0, le=64)
    """Worker processes that extract and chunk uploaded files (0: a thread of this process)."""
    documents_list_cache_seconds: int = 60
    """How long an answer of documents.list is cached at most (any change to the tenant's
    documents retires it at once)."""

    # The language model.
    llm_provider: Literal["offline", "openai"] = "offline"
    """The language model: `offline` (embedded, deterministic, no network) or `openai`, any
    OpenAI-compatible chat-completions server (OpenAI, Azure, vLLM, Ollama, llama.cpp,
    LiteLLM)."""
    llm_base_url: str | None = None
    """The chat-completions server's base URL. Unset: OpenAI's own API."""
    llm_api_key: SecretStr | None = None
    """The key sent to the chat-completions server."""
    llm_model: str = "gpt-4o-mini"
    """The model asked for."""
    llm_timeout_seconds: float = 60
    """How long one call to the model may take."""
    llm_max_retries: int = 3
    """Retries of 429, 5xx, timeouts and dropped connections, with exponential backoff that
    honours Retry-After."""

    # Embeddings, for hybrid search.
    embeddings_base_url: str | None = None
    """Any OpenAI-compatible `/v1/embeddings` server (OpenAI, Ollama, vLLM, llama.cpp, ...).
    Unset: embeddings are off and search is full text alone. Set: EMBEDDINGS_MODEL is
    required."""
    embeddings_api_key: SecretStr | None = None
    """The key sent to the embeddings server."""
    embeddings_model: str | None = Field(None, min_length=1)
    """The embedding model asked for (required with EMBEDDINGS_BASE_URL)."""
    embeddings_dimensions: int | None = Field(None, ge=1, le=16_000)
    """Sent as `dimensions`, for models that can shorten their vectors."""
    embeddings_timeout_seconds: float = Field(30, gt=0)
    """How long one call to the embeddings server may take."""
    embeddings_max_retries: int = Field(2, ge=0, le=10)
    """Retries of a failed call to the embeddings server."""
    embeddings_batch_size: int = Field(64, ge=1, le=2048)
    """Texts embedded per call."""
    embeddings_weight: float = Field(EMBEDDINGS_WEIGHT, ge=0, le=10)
    """Hybrid search's say for the vectors: their weight in the combination of scores, full
    text's being 1 (0: full text alone, no query embedded; vectors are filled all the same, so
    raising it needs no new ingestion). Measure a model before raising it:
    `bench/retrieval.py --embeddings URL --weights 0.05,0.1,0.2`."""

    # Generation.
    generation_credit_hold: int = 40
    """The credits held for one article (the most it can cost)."""
    generation_stall_seconds: float = 1800
    """After how long a generation run still running counts as stalled and is failed."""

    # Chat.
    chat_credit_hold: int = Field(10, ge=1, le=1000)
    """The credits held for one answer (the most it can cost)."""
    chat_stall_seconds: float = Field(300, gt=0)
    """After how long an answer still streaming counts as stalled and is failed."""

    # Live generation runs.
    generation_regenerate_words_per_credit: int = Field(100, ge=1)
    """A regenerated draft costs 1 credit per started this many words rewritten (held like an
    article: GENERATION_CREDIT_HOLD, the most it can cost)."""
    generation_topics_rate_limit: str = "20/hour"
    """How often generation.suggestTopics may be called per tenant, as `<count>/<period>`."""

    # Publishing.
    publisher_credentials_keys: SecretStr | None = None
    """The Fernet keys that encrypt publisher connections' credentials (comma-separated; the
    first encrypts, all decrypt, so a key can be rotated). Required outside `local`; in `local`
    a key file in the data directory is made on first use."""
    outbound_allow_http: bool = False
    """Allow http for requests to user-supplied URLs (CMS sites, webhooks), which are https
    only otherwise (local development and tests; never in production)."""
    outbound_allow_loopback: bool = False
    """Allow loopback addresses for requests to user-supplied URLs, which reach public addresses
    only otherwise (local development and tests; never in production)."""
    outbound_timeout_seconds: float = 30
    """How long a request to a user-supplied URL (a CMS site, a crawled page) may take."""
    outbound_max_response_bytes: int = 5 * 1024 * 1024
    """The largest answer read from a user-supplied URL."""
    outbound_ca_file: Path | None = None
    """A PEM file of CA certificates trusted for requests to user-supplied URLs besides the
    public CAs: a site whose certificate a private CA signed. Checked at start (readable,
    holding a certificate)."""
    publish_max_tries: int = Field(5, ge=1, le=20)
    """Tries of one publish attempt on transient failures."""
    publish_retry_seconds: float = Field(2.0, ge=0)
    """The first backoff between tries of a publish attempt (doubling, with jitter; a target's
    Retry-After wins when longer)."""
    webhook_retry_seconds: list[Annotated[float, Field(ge=0, le=86_400)]] = Field(
        default_factory=lambda: [0.0, 5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0],
        min_length=1,
        max_length=20,
    )
    """Outbound webhooks: the wait before each attempt of a delivery, in seconds (the first is
    the first attempt's: keep it 0, as that wait holds a place of the delivery queue; each later
    one gets +-20 % jitter, a receiver's longer Retry-After wins), so its length is the number
    of attempts and its sum the retry window (about a day) after which a failing endpoint is
    disabled."""
    webhook_timeout_seconds: float = Field(15, gt=0, le=60)
    """How long one attempt of an outbound webhook delivery may take."""

    # Event streams (SSE).
    stream_retention_hours: float = Field(24, gt=0)
    """How long a stream's log is kept after its last event."""
    stream_ping_seconds: float = Field(15, gt=0)
    """The interval of the keep-alive comment on an open stream."""
    stream_poll_seconds: float = Field(0.2, gt=0, le=5)
    """How often a reader polls the database for another process's events."""
    max_open_streams: int = Field(2000, ge=1)
    """The event streams one process serves at once (each an open response); one more is
    refused with 503 and Retry-After before it begins."""

    # Browsers: CORS and stream URLs.
    cors_origins: list[str] = Field(default_factory=list)
    """The origins whose pages may call the API (`https://app.example.com`; empty: no CORS
    headers at all, every cross-origin read refused)."""
    cors_max_age_seconds: int = Field(600, ge=0, le=86_400)
    """How long a browser may reuse a preflight's answer."""
    stream_token_ttl_seconds: int = Field(300, ge=1, le=3600)
    """How long a stream URL (chat.createStreamUrl, generation.createRunStreamUrl) opens its
    stream."""
    stream_token_keys: SecretStr | None = None
    """The secrets stream URLs' tokens are signed with (comma-separated, at least 32 characters
    each: the first signs, all verify, so they rotate). Unset: derived from
    PUBLISHER_CREDENTIALS_KEYS when set (every process has those), else a key file in the data
    directory."""
    impersonation_token_keys: SecretStr | None = None
    """The secrets admin.startImpersonation's tokens are signed with (comma-separated, at least
    32 characters each: the first signs, all verify, so they rotate). Unset: derived from
    PUBLISHER_CREDENTIALS_KEYS when set (required outside `local`), else, in `local`, a key file
    in the data directory."""

    access_cache_seconds: float = 30
    """How long a resolved tenant membership is reused by a process before it is read again (a
    role change or removal retires it at once, on every process when Redis is configured)."""

    # Team: the identity provider's Backend API.
    idp_api_url: str | None = None
    """The identity provider's Backend API (Clerk-shaped: organizations, memberships,
    invitations): team writes go there first. Unset: team writes answer 503."""
    idp_secret_key: SecretStr | None = None
    """The secret key of the identity provider's Backend API."""
    idp_timeout_seconds: float = Field(10, gt=0, le=120)
    """How long a call to the identity provider's Backend API may take."""
    idp_webhook_secret: SecretStr | None = None
    """The signing secret (`whsec_...`) of the identity provider's webhooks (Svix). Unset: every
    identity event is refused."""
    team_redirect_origins: list[str] = Field(default_factory=list)
    """Origins an invitation's redirectUrl may point to (empty: any https URL)."""
    team_sync_rate_limit: str = "1/minute"
    """How often an admin may run team.sync per tenant, as `<count>/<period>`."""

    # Billing on Stripe.
    stripe_secret_key: SecretStr | None = None
    """Stripe's secret API key. Unset: billing is not configured, every tenant is on the free
    plan and checkout and portal answer 503."""
    stripe_webhook_secret: SecretStr | None = None
    """The signing secret (`whsec_...`) of Stripe's webhook endpoint. Unset: every payment event
    is refused."""
    stripe_api_base: str | None = None
    """The API base the `stripe` library calls. Unset: Stripe's own (the tests point it at a
    stand-in)."""
    stripe_livemode: bool = False
    """The mode whose events are accepted (an event's `livemode` must match)."""
    stripe_timeout_seconds: float = Field(20, gt=0, le=120)
    """How long a call to Stripe may take."""
    billing_redirect_origins: list[str] = Field(default_factory=list)
    """Origins a checkout's or portal's return URL may point to (empty: those of
    TEAM_REDIRECT_ORIGINS; both empty: any https URL)."""
    free_plan_limits: dict[str, Annotated[int, Field(ge=0)] | None] = Field(default_factory=dict)
    """The free plan's limits, as JSON: a limit's key (members, documents, storage_bytes,
    active_jobs, publishers, webhook_endpoints, api_keys, crawl_pages: pages per website crawl)
    -> a number, or null for unlimited. A key left out is unlimited, e.g.
    {"members": 3, "active_jobs": 2}."""

    # SEO: Search Console over OAuth 2.0, and the key providers (seo/connections/).
    google_client_id: str | None = None
    """The OAuth 2.0 client id (a Google Cloud "Web application" client) Search Console is
    connected with. Unset: seo.connect for google_search_console answers 400 (not configured)."""
    google_client_secret: SecretStr | None = None
    """The OAuth 2.0 client's secret, sent only to the token and revoke endpoints."""
    seo_oauth_redirect_uris: list[str] = Field(default_factory=list)
    """The redirect URIs seo.connect accepts (exact match; each also registered with the OAuth
    client at Google): the front end's page that receives `code` and `state` and posts them to
    seo.completeConnect. Empty: no OAuth connection can start."""
    google_oauth_authorize_url: str = "https://accounts.google.com/o/oauth2/v2/auth"
    """Google's authorization endpoint (the tests and local runs point these at the stand-in)."""
    google_oauth_token_url: str = "https://oauth2.googleapis.com/token"
    """Google's token endpoint: code exchange and refresh."""
    google_oauth_revoke_url: str = "https://oauth2.googleapis.com/revoke"
    """Google's revocation endpoint (seo.disconnect)."""
    google_webmasters_api_base: str = "https://www.googleapis.com/webmasters/v3"
    """The Search Console API base: sites, searchAnalytics/query, sitemaps."""
    google_url_inspection_api_base: str = "https://searchconsole.googleapis.com/v1"
    """The URL Inspection API base (urlInspection/index:inspect)."""
    plausible_api_base: str = "https://plausible.io"
    """Plausible's base for content analytics' `plausible` sources (Stats API v2: POST
    /api/v2/query with the site's API key); a self-hosted Plausible's URL works too."""
    google_analytics_data_api_base: str = "https://analyticsdata.googleapis.com/v1beta"
    """The GA4 Data API base for content analytics' `ga4` sources (properties/{id}:runReport)."""
    analytics_sync_retries: int = Field(3, ge=0, le=10)
    """How many times a content analytics sync asks a provider again for a day it answered 429
    (or 5xx), waiting as it asks (Retry-After) or 1, 2, 4 s...; the days still refused after that
    end the sync `partial`, named in `missing_days`."""
    analytics_sync_backoff_seconds: float = Field(1.0, ge=0, le=60)
    """The first wait of that back-off when the provider names none (doubled each time)."""
    dataforseo_api_base: str = "https://api.dataforseo.com"
    """DataForSEO's API base (a connection's key is checked with GET /v3/appendix/user_data)."""
    openai_api_base: str = "https://api.openai.com/v1"
    """OpenAI's API base for the SEO `openai` provider (a key is checked with GET /models)."""
    perplexity_api_base: str = "https://api.perplexity.ai"
    """Perplexity's API base for the SEO `perplexity` provider (OpenAI-compatible)."""
    gemini_api_base: str = "https://generativelanguage.googleapis.com/v1beta/openai"
    """Gemini's OpenAI-compatible API base for the SEO `gemini` provider."""
    anthropic_api_base: str = "https://api.anthropic.com"
    """Anthropic's API base for the SEO `anthropic` provider (a key is checked with GET
    /v1/models; AI visibility's claude engine asks POST /v1/messages with the web search tool)."""
    ai_gemini_api_base: str = "https://generativelanguage.googleapis.com/v1beta"
    """Gemini's native API base, which AI visibility asks the `gemini` engine through
    (`POST {base}/models/{model}:generateContent` with Google Search grounding)."""
    ai_visibility_request_timeout_seconds: float = Field(120.0, ge=1, le=600)
    """How long one answer engine may take to answer one AI visibility sample (an answer with
    web search commonly takes 5-60 s)."""
    rank_live_max_tasks: int = Field(20, ge=0, le=500)
    """Rank checks of at most this many SERP tasks (keyword x device) use DataForSEO's live mode
    (one request per task, answered at once, dearer per task); larger ones its task mode
    (task_post, then tasks_ready and task_get/advanced)."""
    rank_poll_seconds: float = Field(15.0, ge=0, le=600)
    """How often a task-mode rank check asks DataForSEO's tasks_ready for its tasks."""
    rank_task_timeout_seconds: float = Field(3600.0, ge=1, le=86400)
    """How long a task-mode rank check waits for its posted tasks before it fails those still
    not ready (`timeout`)."""
    rank_request_timeout_seconds: float = Field(120.0, ge=1, le=600)
    """How long one DataForSEO request may take (a live SERP commonly takes 5-30 s)."""
    pagespeed_enabled: bool = True
    """Outbound PageSpeed measurements (seo.runPageSpeed). False: the operation answers 409 and
    nothing is sent; stored results stay readable."""
    pagespeed_provider: Literal["google", "local"] = "google"
    """Who measures: `google`, the PageSpeed Insights API v5 (Lighthouse lab data and Chrome UX
    Report field data); `local`, the Lighthouse CLI run here with a local Chromium (lab data
    only; the local environment only, as Chromium then fetches whatever the page loads,
    outside the outbound guard)."""
    pagespeed_api_base: str = "https://www.googleapis.com"
    """PageSpeed Insights' base: GET {base}/pagespeedonline/v5/runPagespeed."""
    pagespeed_timeout_seconds: float = Field(120.0, ge=5, le=600)
    """How long one measurement may take (Google's Lighthouse run commonly takes 10-60 s)."""
    pagespeed_retries: int = Field(2, ge=0, le=10)
    """Retries of one measurement answered 429 or 5xx (or unreachable) before it is stored as
    failed."""
    pagespeed_backoff_seconds: float = Field(5.0, ge=0, le=300)
    """The first wait before such a retry when Google sends no Retry-After; doubled each time
    (capped at 60 s)."""
    pagespeed_lighthouse_path: Path = Field(default_factory=default_lighthouse_path)
    """The `local` provider's Lighthouse CLI (the version pinned in tools/lighthouse:
    `npm ci --prefix tools/lighthouse`)."""
    pagespeed_chromium_path: Path = Path("/usr/bin/chromium")
    """The `local` provider's Chromium (Debian's package `chromium`)."""
    seo_sync_retries: int = Field(5, ge=0, le=20)
    """Retries of one Search Console request answered with a quota error (429, 403
    quotaExceeded/rateLimitExceeded) or a 5xx before its day is left out of the sync (the run
    ends `partial`, naming it)."""
    seo_sync_backoff_seconds: float = Field(2.0, ge=0, le=60)
    """The first wait before such a retry when Google sends no Retry-After; doubled each time."""
    seo_sync_max_wait_seconds: float = Field(120.0, ge=0, le=900)
    """The longest one wait before a retry, Retry-After included."""

    # Stock photos (media/), from Unsplash.
    stock_unsplash_base_url: str = "https://api.unsplash.com"
    """Unsplash's API (or a server speaking it: the tests' stand-in). Requests go through the
    outbound guard (https and public addresses, unless the OUTBOUND_ALLOW_* settings allow
    more)."""
    stock_unsplash_access_key: SecretStr | None = None
    """The application's access key, sent as `Authorization: Client-ID <key>`. Unset, the
    provider is not configured: stock search and import answer 400 naming `provider`."""
    stock_unsplash_app_name: str = Field("contentplatform", min_length=1, max_length=100)
    """The application's name, in the `utm_source` of every attribution link, as Unsplash
    requires."""
    stock_timeout_seconds: float = Field(10, gt=0, le=120)
    """How long a request to the stock provider may take."""
    stock_search_cache_seconds: float = Field(600, ge=0, le=86_400)
    """How long a stock search is kept (in the shared cache) for everyone asking the same."""

    # Mail (mail/): the outbox's messages leave over SMTP.
    smtp_host: str | None = Field(None, min_length=1, max_length=253)
    """The SMTP server mail is handed to. Unset in `local`: `serve` runs a loopback server that
    stores each message as an .eml file under `<data_dir>/mail/`. Unset elsewhere: mail is not
    configured; messages are kept `queued` (system.status reports `mail` as an outage) and leave
    once a host is set."""
    smtp_port: int = Field(587, ge=1, le=65_535)
    """The SMTP server's port (587 for STARTTLS, 465 for implicit TLS, 25 between servers)."""
    smtp_tls: Literal["none", "starttls", "tls"] = "starttls"
    """How the connection is encrypted: `starttls` (upgrade a plain connection, required),
    `tls` (implicit TLS from the first byte), `none` (plain text: loopback and tests only)."""
    smtp_username: str | None = Field(None, min_length=1, max_length=254)
    """The SMTP login, if the server wants one (with `smtp_password`)."""
    smtp_password: SecretStr | None = None
    """The SMTP password."""
    smtp_timeout_seconds: float = Field(30, gt=0, le=300)
    """How long one SMTP conversation may take."""
    mail_from: str = Field("Content Platform <noreply@localhost>", min_length=3, max_length=254)
    """The sender of every message (`Name <address>` or an address)."""
    mail_retry_attempts: int = Field(8, ge=1, le=30)
    """How many times a message is tried on connection errors and 4xx answers before it is
    marked `failed`."""
    mail_retry_first_seconds: float = Field(30, ge=0, le=3600)
    """The wait after a message's first failed attempt; each next wait doubles (at most an
    hour)."""
    mail_local_port: int = Field(8025, ge=1, le=65_535)
    """In `local` without `smtp_host`: the loopback port of `serve`'s own SMTP server."""

    # Support (support/): tickets and the public contact form.
    contact_rate_limit: str = "5/hour"
    """Messages the public contact form (public.contact) takes per client address, as
    `<count>/<period>`; past it, 429 with Retry-After."""
    altcha_hmac_key: SecretStr | None = None
    """The HMAC key of the contact form's proof-of-work captcha (ALTCHA, self-hosted). Set: a
    contact message must carry a solved challenge (`captchaToken`), issued with this same key by
    the site that shows the form. Unset: no captcha is asked for."""
    support_staff_email: str | None = Field(None, pattern=r"^[^\s@]+@[^\s@]+$", max_length=254)
    """Where platform staff hear of each new ticket, contact message and customer reply (one
    mail each). Unset: staff see them in admin.listSupportTickets only."""

    features: dict[str, bool | Annotated[int, Field(ge=0, le=100)]] = Field(default_factory=dict)
    """Feature flags (features/flags.py) as the operator sets them for every organization, as
    JSON: a flag's key -> true/false (on/off for all) or a percentage 0-100 (on for that share
    of organizations, chosen by a stable hash), e.g. {"chat": false, "topic_suggestions": 25}.
    An organization's override and its own opt-in still win; unknown keys are refused at
    start."""

    log_level: str = "INFO"
    """The least level logged (DEBUG, INFO, WARNING, ERROR)."""
    log_json: bool | None = None
    """Logs as JSON lines. Unset: JSON outside `local`, text in `local`."""

    build_commit: str = "unknown"
    """The commit this build was made from, as system.version reports it."""
    build_time: str | None = None
    """When this build was made, as system.version reports it."""

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, origins: list[str]) -> list[str]:
        """Each an origin as a browser sends it: lower case, no path (a trailing `/` is
        dropped); `*` is refused, as every allowed origin is named."""
        found = []
        for given in origins:
            origin = given.strip().rstrip("/").lower()
            if not _ORIGIN.fullmatch(origin):
                raise ValueError(
                    f"CONTENTPLATFORM_CORS_ORIGINS: {given!r} is not an origin: write each as "
                    "scheme://host[:port] (https://app.example.com, http://localhost:3000), with "
                    "no path, a host in ASCII (punycode), and no `*`"
                )
            found.append(origin)
        return list(dict.fromkeys(found))

    @field_validator("mail_from")
    @classmethod
    def _mailbox(cls, value: str) -> str:
        """One mailbox as a From header takes it: `Name <local@domain>` or `local@domain`, on
        one line (a line break would start a header of its own)."""
        found = getaddresses([value])
        address = found[0][1] if len(found) == 1 else ""
        local, _, domain = address.rpartition("@")
        if "\r" in value or "\n" in value or not local or not domain or " " in address:
            raise ValueError(
                f"CONTENTPLATFORM_MAIL_FROM: {value!r} is not one sender: write it as "
                "`Name <noreply@example.com>` or `noreply@example.com`, on one line"
            )
        return value

    @field_validator("stream_token_keys", "impersonation_token_keys")
    @classmethod
    def _token_keys(cls, keys: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        if keys is not None:
            names = [key.strip() for key in keys.get_secret_value().split(",") if key.strip()]
            if not names or any(len(key) < 32 for key in names):
                setting = f"CONTENTPLATFORM_{str(info.field_name).upper()}"
                raise ValueError(
                    f"{setting}: each comma-separated key needs at least "
                    "32 characters (e.g. `openssl rand -hex 32`)"
                )
        return keys

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
        if self.outbound_ca_file is not None:
            _check_ca_file(self.outbound_ca_file)
        if self.jwks_url and not self.jwt_issuer:
            raise ValueError("CONTENTPLATFORM_JWT_ISSUER is required with CONTENTPLATFORM_JWKS_URL")
        if self.embeddings_base_url and not self.embeddings_model:
            raise ValueError(
                "CONTENTPLATFORM_EMBEDDINGS_MODEL is required with "
                "CONTENTPLATFORM_EMBEDDINGS_BASE_URL"
            )
        if unknown := set(self.free_plan_limits) - set(PLAN_LIMIT_KEYS):
            raise ValueError(
                f"CONTENTPLATFORM_FREE_PLAN_LIMITS names unknown limits {sorted(unknown)}; "
                f"known: {sorted(PLAN_LIMIT_KEYS)}"
            )
        if self.pagespeed_provider == "local" and self.env is not Environment.local:
            raise ValueError(
                "CONTENTPLATFORM_PAGESPEED_PROVIDER=local runs Chromium outside the outbound "
                "guard: the local environment only"
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
