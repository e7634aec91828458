"""Typed deployment settings: one profile file plus `cdk -c key=value` overrides, validated once.

`app.py` is the only reader of CDK context; every construct receives narrow frozen props built
from these models, so a bad value fails before any construct exists, with one message naming
every bad field. `models` holds the sections, `cross_checks` the rules spanning them, `loading` the
profile reader and the override grammar.
"""

from infra.settings.cross_checks import deployment_cross_checks
from infra.settings.existing_cluster import ClusterSettings, ExistingClusterSettings
from infra.settings.loading import (
    CONFIG_DIR,
    RESERVED_CONTEXT_KEYS,
    SettingsError,
    apply_overrides,
    list_profiles,
    load_settings,
    parse_settings,
    profile_data,
    settings_overrides,
)
from infra.settings.models import (
    DEFAULT_KARPENTER_AMI_ALIAS,
    DEFAULT_KUBERNETES_VERSION,
    SUPPORTED_KUBERNETES_VERSIONS,
    AddonSettings,
    CapacitySettings,
    DeploymentSettings,
    NeuronSettings,
    SystemNodeGroupSettings,
    Trn2PoolSettings,
    VpcSettings,
)

__all__ = [
    "CONFIG_DIR",
    "DEFAULT_KARPENTER_AMI_ALIAS",
    "DEFAULT_KUBERNETES_VERSION",
    "RESERVED_CONTEXT_KEYS",
    "SUPPORTED_KUBERNETES_VERSIONS",
    "AddonSettings",
    "CapacitySettings",
    "ClusterSettings",
    "DeploymentSettings",
    "ExistingClusterSettings",
    "NeuronSettings",
    "SettingsError",
    "SystemNodeGroupSettings",
    "Trn2PoolSettings",
    "VpcSettings",
    "apply_overrides",
    "deployment_cross_checks",
    "list_profiles",
    "load_settings",
    "parse_settings",
    "profile_data",
    "settings_overrides",
]
