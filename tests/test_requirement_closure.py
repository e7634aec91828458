"""The requirement closure the setup and bundle tests share (tests/requirement_closure.py), read
from this environment's installed metadata."""

from __future__ import annotations

from packaging.requirements import Requirement

from tests.requirement_closure import distribution_name, modules_of, requirement_closure


def test_names_are_normalized_as_pep_503_says() -> None:
    assert distribution_name("Typing_Extensions") == "typing-extensions"
    assert distribution_name("zope.interface") == "zope-interface"


def test_the_closure_follows_each_installed_distributions_own_requirements() -> None:
    closure = requirement_closure([Requirement("requests")])
    assert {"requests", "idna", "urllib3", "certifi", "charset-normalizer"} <= closure


def test_an_extra_brings_its_requirements_and_only_when_asked() -> None:
    assert "py-partiql-parser" not in requirement_closure([Requirement("moto")])
    assert "py-partiql-parser" in requirement_closure([Requirement("moto[s3]")])


def test_a_requirement_not_installed_is_counted_not_followed() -> None:
    assert requirement_closure([Requirement("no-such-distribution-here")]) == {
        "no-such-distribution-here"
    }


def test_the_modules_are_those_the_distributions_install() -> None:
    modules = modules_of({"requests", "charset-normalizer"})
    assert {"requests", "charset_normalizer"} <= modules
    assert "idna" not in modules
