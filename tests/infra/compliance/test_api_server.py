"""The API server's own rules, checked on manifests at synth: each rule refuses a planted bug the
schemas pass (kubernetes-validate types a Quantity, a name and a label value as bare strings)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes.utils import parse_quantity
from trnspec.boundary.problems import Problem

from infra.compliance.api_server import (
    ObjectRef,
    api_server_findings,
    finding,
    is_quantity,
    quantity_value,
)

NS = "trnspec"


def _job(storage: object = "40Gi", name: str = "model-weights-0123abcd") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "labels": {"app.kubernetes.io/name": "m"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "m"}},
                "spec": {
                    "serviceAccountName": "m-weights",
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "copy-0",
                            "image": "img",
                            "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                        }
                    ],
                    "volumes": [
                        {
                            "name": "work",
                            "ephemeral": {
                                "volumeClaimTemplate": {
                                    "spec": {
                                        "accessModes": ["ReadWriteOnce"],
                                        "storageClassName": "gp3",
                                        "resources": {"requests": {"storage": storage}},
                                    }
                                }
                            },
                        },
                        {"name": "config", "configMap": {"name": "m-config"}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "4Gi"}},
                    ],
                },
            }
        },
    }


CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "m-config", "namespace": NS},
}
PROVIDED = (ObjectRef("ServiceAccount", "m-weights", NS), ObjectRef("StorageClass", "gp3"))


def _findings(*manifests: dict[str, Any], provided: tuple[ObjectRef, ...] = PROVIDED) -> list[str]:
    return [str(f) for f in api_server_findings(list(manifests), provided)]


def test_a_finding_is_the_shared_problem_naming_object_and_path_value_and_rule() -> None:
    found = finding("Job/m-weights", "spec.template.spec.volumes.0.name", "Work", "a rule")
    assert found == Problem("Job/m-weights spec.template.spec.volumes.0.name", "Work", "a rule")
    assert str(found) == "Job/m-weights spec.template.spec.volumes.0.name=Work: a rule"


def test_a_sound_job_passes() -> None:
    assert _findings(_job(), CONFIG_MAP) == []


def test_a_planted_nonegi_quantity_is_refused() -> None:
    found = _findings(_job(storage="NoneGi"), CONFIG_MAP)
    (quantity,) = [f for f in found if "Quantity" in f]
    assert quantity.startswith("Job/model-weights-0123abcd ")
    assert "volumeClaimTemplate.spec.resources.requests.storage=NoneGi:" in quantity
    assert any("Python's None" in f for f in found)  # and as a leak, the same place


@pytest.mark.parametrize("bad", ["40 Gi", "40GB", "4e", "", "Gi", True, float("nan")])
def test_every_quantity_place_is_parsed_by_the_grammar(bad: object) -> None:
    job = _job()
    pod = job["spec"]["template"]["spec"]
    pod["volumes"][2]["emptyDir"]["sizeLimit"] = bad
    pod["containers"][0]["resources"]["requests"]["memory"] = bad
    found = _findings(job, CONFIG_MAP)
    assert any("emptyDir.sizeLimit" in f for f in found)
    assert any("resources.requests.memory" in f for f in found)


@pytest.mark.parametrize(
    "text",
    ["40Gi", "500m", "2", "1.5", ".5", "1e3", "+1E-3", "12Ki", "3M", "0", "1.", "7Ei", "-1"],
)
def test_the_grammar_accepts_what_the_kubernetes_client_parses(text: str) -> None:
    assert is_quantity(text)
    parse_quantity(text)  # the Python client's implementation of the same grammar


@pytest.mark.parametrize("text", ["NoneGi", "40gi", "1.5.2", "e3", "4Mi3"])
def test_the_grammar_refuses_what_the_kubernetes_client_refuses(text: str) -> None:
    assert not is_quantity(text)
    with pytest.raises(ValueError):
        parse_quantity(text)


@pytest.mark.parametrize("text", ["nanGi", "40 Gi", " 40Gi", "Infinity"])
def test_the_grammar_refuses_what_the_lenient_python_client_lets_through(text: str) -> None:
    """The Python client parses through Decimal (which reads "nan" and trims spaces); the API
    server's grammar admits neither, so the check follows the grammar, not the client."""
    assert not is_quantity(text)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Model_Weights", "Job"),
        ("model-weights-" + "a" * 60, "Job"),  # a Job's name becomes a label: 63 at most
        ("4b-server", "Service"),  # a Service name is an RFC 1035 label
        ("-config", "ConfigMap"),
    ],
)
def test_a_bad_name_is_refused(name: str, kind: str) -> None:
    manifest = (
        _job(name=name)
        if kind == "Job"
        else {
            "apiVersion": "v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": NS},
        }
    )
    found = _findings(manifest, CONFIG_MAP)
    assert any(f.startswith(f"{kind}/{name} metadata.name=") for f in found), found


def test_a_bad_label_value_is_refused() -> None:
    job = _job()
    job["spec"]["template"]["metadata"]["labels"]["trnspec.io/model"] = "Qwen/Qwen3-4B"
    (finding,) = _findings(job, CONFIG_MAP)
    assert "template.metadata.labels.trnspec.io/model=Qwen/Qwen3-4B:" in finding


@pytest.mark.parametrize("leak", ["None", "True", "False", "nan", "inf"])
def test_a_leaked_python_value_in_a_string_is_refused(leak: str) -> None:
    job = _job()
    env = {"name": "TRNSPEC_K", "value": f"k={leak}"}
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [env]
    (finding,) = _findings(job, CONFIG_MAP)
    assert f"containers.0.env.0.value=k={leak}:" in finding
    assert f"Python's {leak}" in finding


def test_the_source_of_a_python_c_program_is_code_not_a_leak() -> None:
    """`python -c <program>`: the program may say None; its arguments may not."""
    job = _job()
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["command"] = ["python", "-c", "x = None\nprint(x is None)", "--k", "None"]
    (finding,) = _findings(job, CONFIG_MAP)
    assert "containers.0.command.4=None:" in finding
    container["command"] = ["sh", "-c", "echo None"]  # not a Python program
    (finding,) = _findings(job, CONFIG_MAP)
    assert "containers.0.command.2=echo None:" in finding


def test_words_that_contain_those_letters_are_not_leaks() -> None:
    job = _job()
    words = "Nonetheless: info, nanoseconds, inference, true, none, null, Infinity"
    job["metadata"]["annotations"] = {"note": words}
    assert _findings(job, CONFIG_MAP) == []


def test_a_dangling_reference_is_refused() -> None:
    """The ConfigMap the pod mounts is not created; nor the service account without `provided`."""
    found = _findings(_job(), provided=())
    assert any(
        "volumes.1.configMap.name=m-config:" in f and "ConfigMap trnspec/m-config" in f
        for f in found
    )
    assert any("serviceAccountName=m-weights:" in f for f in found)
    assert any("storageClassName=gp3:" in f and "StorageClass gp3" in f for f in found)
    assert len(found) == 3


def test_an_object_of_another_namespace_does_not_satisfy_a_reference() -> None:
    elsewhere = copy.deepcopy(CONFIG_MAP)
    elsewhere["metadata"]["namespace"] = "default"
    assert len(_findings(_job(), elsewhere)) == 1


def test_optional_references_and_the_default_account_need_nothing() -> None:
    job = _job()
    pod = job["spec"]["template"]["spec"]
    del pod["serviceAccountName"]
    pod["volumes"][1]["configMap"]["optional"] = True
    assert _findings(job, provided=(ObjectRef("StorageClass", "gp3"),)) == []


def test_a_request_above_its_limit_is_refused() -> None:
    job = _job()
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"memory": "1536Mi"}
    (finding,) = _findings(job, CONFIG_MAP)
    assert "containers.0.resources.requests.memory=2Gi:" in finding
    assert "less than or equal to the limit (1536Mi)" in finding


def test_a_neuron_device_request_must_equal_its_limit() -> None:
    job = _job()
    resources = job["spec"]["template"]["spec"]["containers"][0]["resources"]
    resources["requests"]["aws.amazon.com/neuron"] = "1"
    assert any("needs a limit equal" in f for f in _findings(job, CONFIG_MAP))
    resources["limits"] = {"aws.amazon.com/neuron": "2"}
    assert any("request must equal its limit (2)" in f for f in _findings(job, CONFIG_MAP))
    resources["limits"] = {"aws.amazon.com/neuron": 1}
    assert _findings(job, CONFIG_MAP) == []


def test_a_selector_that_does_not_select_its_template_is_refused() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "m", "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": "other"}},
            "template": copy.deepcopy(_job()["spec"]["template"]),
        },
    }
    (finding,) = _findings(deployment, CONFIG_MAP)
    assert "spec.selector.matchLabels.app.kubernetes.io/name=other:" in finding


@pytest.mark.parametrize(
    ("text", "value"),
    [("40Gi", 40 * 2**30), ("500m", 0.5), ("2", 2), ("1e3", 1000), ("1.5k", 1500), (3, 3)],
)
def test_quantities_compare_by_the_amount_they_stand_for(text: object, value: float) -> None:
    assert quantity_value(text) == pytest.approx(value)


def test_a_scaled_object_of_a_deployment_nothing_creates_is_refused() -> None:
    scaled = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "m", "namespace": NS},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "m"}},
    }
    (finding,) = _findings(scaled)
    assert "spec.scaleTargetRef.name=m:" in finding
    assert "Deployment trnspec/m" in finding
