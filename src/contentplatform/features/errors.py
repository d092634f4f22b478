"""What the features domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import Conflict, Forbidden, NotFound


class FeatureDisabled(Forbidden):
    """The operation sits behind a feature flag that is off for this organization (the detail
    and `feature` name it; features.list shows why)."""

    def __init__(self, key: str) -> None:
        super().__init__(
            f"The feature '{key}' is turned off for this organization.",
            extensions={"feature": key},
        )


class FeatureNotFound(NotFound):
    """There is no feature flag of that key (features.list names them)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"There is no feature flag '{key}'.")


class FeatureNotOptional(Forbidden):
    """The flag allows no opt-in or opt-out (`opt_in_allowed` false; the detail names it)."""

    def __init__(self, key: str) -> None:
        super().__init__(
            f"The feature '{key}' cannot be opted in or out of: it is not a beta that allows it.",
            extensions={"feature": key},
        )


class FeatureOverridden(Conflict):
    """The operator set the flag for this organization; its opt-in cannot change it."""

    def __init__(self, key: str) -> None:
        super().__init__(
            f"The feature '{key}' is set for this organization by the operator; an opt-in or "
            "opt-out cannot change it.",
            extensions={"feature": key},
        )
