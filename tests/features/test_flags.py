"""The registry and its evaluation, below the API: the order in which a flag is decided (a
setting's plans after the tenant's own word and before the rollout), the rollout's stable hash,
and the check of the operator's config."""

from __future__ import annotations

import uuid

import pytest

from contentplatform.app import create_app
from contentplatform.config import Settings
from contentplatform.features.flags import (
    FLAGS,
    Evaluation,
    Flag,
    Setting,
    Stored,
    bucket,
    check_config,
    evaluate,
    in_rollout,
)

BETA = Flag("beta_thing", "beta", default=False, opt_in_allowed=True, description="A beta")
GA = Flag("ga_thing", "ga", default=True, opt_in_allowed=False, description="A GA feature")
TENANT = uuid.UUID("3f2b8a0e-2c1d-4e5f-9a7b-1c2d3e4f5a6b")


def test_the_registry_declares_the_two_flags() -> None:
    assert FLAGS["chat"] == Flag(
        "chat", "ga", True, False, "Chat over the tenant's knowledge (chat.*)"
    )
    topics = FLAGS["topic_suggestions"]
    assert (topics.stage, topics.default, topics.opt_in_allowed) == ("beta", True, True)
    assert all(key == flag.key for key, flag in FLAGS.items())


def test_the_default_decides_when_nothing_else_does() -> None:
    assert evaluate(BETA, TENANT, {}, None) == Evaluation(False, "default")
    assert evaluate(GA, TENANT, {}, None) == Evaluation(True, "default")


def test_the_global_config_turns_a_flag_on_or_off_for_everyone() -> None:
    assert evaluate(BETA, TENANT, {"beta_thing": True}, None) == Evaluation(True, "default")
    assert evaluate(GA, TENANT, {"ga_thing": False}, None) == Evaluation(False, "default")
    assert evaluate(GA, TENANT, {"other": False}, None) == Evaluation(True, "default")


def test_a_percentage_rolls_out_by_the_tenants_bucket() -> None:
    place = bucket("beta_thing", TENANT)
    assert evaluate(BETA, TENANT, {"beta_thing": place + 1}, None) == Evaluation(True, "rollout")
    assert evaluate(BETA, TENANT, {"beta_thing": place}, None) == Evaluation(False, "rollout")
    assert evaluate(GA, TENANT, {"ga_thing": 0}, None) == Evaluation(False, "rollout")
    assert evaluate(BETA, TENANT, {"beta_thing": 100}, None) == Evaluation(True, "rollout")


def test_an_opt_in_wins_over_the_config_for_flags_that_allow_one() -> None:
    out = Stored(enabled=False, source="opt_in")
    inside = Stored(enabled=True, source="opt_in")
    assert evaluate(BETA, TENANT, {"beta_thing": True}, out) == Evaluation(False, "opt_in")
    assert evaluate(BETA, TENANT, {"beta_thing": 0}, inside) == Evaluation(True, "opt_in")
    # A flag that allows none ignores a stored opt-in (say, one made while it was a beta).
    assert evaluate(GA, TENANT, {}, out) == Evaluation(True, "default")


def test_an_override_wins_over_everything() -> None:
    override = Stored(enabled=False, source="override")
    assert evaluate(GA, TENANT, {"ga_thing": True}, override) == Evaluation(False, "override")
    on = Stored(enabled=True, source="override")
    assert evaluate(BETA, TENANT, {"beta_thing": 0}, on) == Evaluation(True, "override")


def test_the_rollout_is_stable_and_close_to_its_percentage() -> None:
    tenants = [uuid.UUID(int=n * 7919 + 12345) for n in range(10_000)]
    # The same on every call (and every process: hashlib, not the salted hash()).
    assert [bucket("chat", t) for t in tenants[:50]] == [bucket("chat", t) for t in tenants[:50]]
    assert bucket("chat", TENANT) == bucket("chat", uuid.UUID(str(TENANT)))
    assert all(0 <= bucket("chat", t) < 100 for t in tenants)
    for percent in (1, 10, 25, 50, 90):
        share = sum(in_rollout("topic_suggestions", t, percent) for t in tenants) / len(tenants)
        assert abs(share - percent / 100) < 0.02, (percent, share)
    # Raising the percentage only adds tenants.
    at_10 = {t for t in tenants if in_rollout("chat", t, 10)}
    at_20 = {t for t in tenants if in_rollout("chat", t, 20)}
    assert at_10 < at_20
    assert not any(in_rollout("chat", t, 0) for t in tenants)
    assert all(in_rollout("chat", t, 100) for t in tenants)
    # Flags roll out to different tenants.
    other = {t for t in tenants if in_rollout("topic_suggestions", t, 10)}
    assert other != at_10


def test_the_config_check_names_an_unknown_flag() -> None:
    check_config({})
    check_config({"chat": False, "topic_suggestions": 25})
    with pytest.raises(ValueError, match="'teleportation'"):
        check_config({"chat": True, "teleportation": True})
    with pytest.raises(ValueError, match="'chat'"):
        check_config({"chat": 101})


def test_the_config_is_read_from_the_environment_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTENTPLATFORM_FEATURES", '{"chat": false, "topic_suggestions": 25}')
    features = Settings(_env_file=None).features  # type: ignore[call-arg]
    assert features == {"chat": False, "topic_suggestions": 25}
    assert features["chat"] is False  # a bool stays a bool, an int an int
    monkeypatch.setenv("CONTENTPLATFORM_FEATURES", '{"topic_suggestions": 1}')
    assert Settings(_env_file=None).features["topic_suggestions"] is not True  # type: ignore[call-arg]
    monkeypatch.setenv("CONTENTPLATFORM_FEATURES", '{"chat": 101}')
    with pytest.raises(ValueError, match="features"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_a_service_configured_with_an_unknown_flag_refuses_to_start(tmp_path) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, env="local", data_dir=tmp_path, features={"chatt": True}
    )
    with pytest.raises(ValueError, match="unknown feature flag 'chatt'"):
        create_app(settings)


def setting(*, default: bool = False, percent: int | None = None, plans=("pro",)) -> Setting:
    return Setting("beta", default, percent, tuple(plans), opt_in_allowed=True)


def test_a_settings_plans_turn_it_on_for_their_tenants_before_the_rollout() -> None:
    only_pro = setting()
    assert evaluate(BETA, TENANT, {}, None, only_pro, plan="pro") == Evaluation(True, "plan")
    assert evaluate(BETA, TENANT, {}, None, only_pro, plan="free") == Evaluation(False, "default")
    # No plan known (no reader registered): the plans do not speak.
    assert evaluate(BETA, TENANT, {}, None, only_pro) == Evaluation(False, "default")
    # A plan's tenants have it wherever they fall in the rollout; the others are rolled out to.
    none_rolled = setting(percent=0)
    assert evaluate(BETA, TENANT, {}, None, none_rolled, plan="pro") == Evaluation(True, "plan")
    assert evaluate(BETA, TENANT, {}, None, none_rolled, plan="free") == Evaluation(
        False, "rollout"
    )
    assert evaluate(BETA, TENANT, {}, None, setting(percent=100), plan="free") == Evaluation(
        True, "rollout"
    )
    # On for everyone: the plan made no difference.
    everyone = setting(default=True)
    assert evaluate(BETA, TENANT, {}, None, everyone, plan="pro") == Evaluation(True, "default")
    # Plans come with the operator's setting only; the global config has none.
    assert evaluate(BETA, TENANT, {"beta_thing": 0}, None, plan="pro") == Evaluation(
        False, "rollout"
    )


def test_the_tenants_own_word_wins_over_its_plan() -> None:
    only_pro = setting()
    override = Stored(enabled=False, source="override")
    assert evaluate(BETA, TENANT, {}, override, only_pro, plan="pro") == Evaluation(
        False, "override"
    )
    out = Stored(enabled=False, source="opt_in")
    assert evaluate(BETA, TENANT, {}, out, only_pro, plan="pro") == Evaluation(False, "opt_in")
