"""What an add-on declares about the others: the add-ons it needs and the ones it cannot share
a cluster with (the cdk-eks-blueprints rule: each add-on states its dependencies and conflicts,
checked at synth). Each module of infra/platform/addons declares one `ADDON`; `selection.ADDONS`
lists them and `selection.addon_problems` checks an installed set against every declaration.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Addon:
    """One add-on's name (as in infra/platform/addons/pins.py) and its relations to the others."""

    name: str
    requires: frozenset[str] = frozenset()
    """Add-ons that must be installed too; the platform stack deploys them first."""
    excludes: frozenset[str] = frozenset()
    """Add-ons that must not be installed on the same cluster."""
    reason: str = ""
    """Why (for the message when a relation is broken)."""
