"""All manifests of one serving workload, grouped by what they must wait for on the cluster."""

from __future__ import annotations

from dataclasses import dataclass, fields

from infra.serving.manifests.arm_panels import calibration_arms, with_arm_panels
from infra.serving.manifests.autoscaling import scaled_object
from infra.serving.manifests.bundle import with_bundle
from infra.serving.manifests.calibration import (
    arm_scaled_object,
    calibration_arm,
    calibration_manifests,
    with_calibration_trigger,
)
from infra.serving.manifests.config_map import serving_config_map
from infra.serving.manifests.dashboard import dashboard_for_config_yaml
from infra.serving.manifests.disruption import pod_disruption_budget
from infra.serving.manifests.monitoring import (
    dashboard_config_map,
    neuron_monitor_pod_monitor,
    server_service_monitor,
)
from infra.serving.manifests.namespace import namespace
from infra.serving.manifests.network_policy import network_policies
from infra.serving.manifests.pod import Manifest
from infra.serving.manifests.precompile import precompile_job, precompile_job_wanted
from infra.serving.manifests.server import deployment
from infra.serving.manifests.service import cluster_service, internal_nlb_service
from infra.serving.manifests.spec import WorkloadSpec
from infra.serving.manifests.wake import wake_path
from infra.serving.manifests.weights import weights_job
from infra.settings.serving import ServingSettings


@dataclass(frozen=True)
class WorkloadManifests:
    """`core` needs only the namespace; `keda` needs KEDA's CRDs; `monitoring` the operator's."""

    namespace: Manifest
    core: list[Manifest]
    keda: list[Manifest]
    monitoring: list[Manifest]

    def all(self) -> list[Manifest]:
        out = [self.namespace]
        for f in fields(self):
            if f.name != "namespace":
                out.extend(getattr(self, f.name))
        return out


def build_manifests(spec: WorkloadSpec, settings: ServingSettings) -> WorkloadManifests:
    arm = calibration_arm(spec, settings)
    core = [
        # Policies first: the pods never run a moment without them.
        *network_policies(spec, settings),
        serving_config_map(spec),
        # Fills the bucket the two below wait for (first deploy: it starts empty).
        *([weights_job(spec, settings)] if spec.hub_copies else []),
        # Not on a one-chip node: there the replica compiles and publishes itself (precompile.py).
        *([precompile_job(spec, settings)] if precompile_job_wanted(spec) else []),
        deployment(spec, settings),
        cluster_service(spec),
        pod_disruption_budget(spec),
        # serving.calibration: the speculative arm beside this (plain) one and the Job.
        *calibration_manifests(spec, settings, arm),
    ]
    if settings.internal_nlb:
        # Who may reach the NLB: the configured ranges, else the VPC (explicit, not the
        # controller's default).
        sources = settings.nlb_source_cidrs or ((spec.vpc_cidr,) if spec.vpc_cidr else ())
        core.append(internal_nlb_service(spec, sources))
    monitoring: list[Manifest] = []
    dashboard = dashboard_for_config_yaml(spec.config_yaml)
    if arm is not None:
        # Per deployment: each arm's measured TPOT and cost beside the plan's predictions.
        dashboard = with_arm_panels(dashboard, calibration_arms(spec, arm, settings))
    if settings.prometheus == "in-cluster":
        # With an existing Prometheus the pods' prometheus.io/* annotations are the contract;
        # Prometheus Operator CRDs and the Grafana sidecar may not exist there.
        monitoring = [
            server_service_monitor(spec, settings),
            # The speculative arm under its own `service` label (never counted by KEDA).
            *([server_service_monitor(arm, settings)] if arm is not None else []),
            neuron_monitor_pod_monitor(settings),
            dashboard_config_map(settings, dashboard),
        ]
    # With scale_to_zero: the interceptor's route, the wake Service and policies (wake.py).
    wake = wake_path(spec, settings)
    # serving.calibration: the Job's pods hold a plain replica and the arm (calibration.py).
    main_scaled = with_calibration_trigger(scaled_object(spec, settings), spec, settings)
    keda = [
        wake.scaled(main_scaled),
        *wake.keda,
        *([arm_scaled_object(spec, arm)] if arm is not None else []),
    ]
    # Every pod that runs trnspec installs the bundle first (bundle.py): applied here, to every
    # manifest, so no builder can leave it out.
    return WorkloadManifests(
        namespace=namespace(spec.namespace),
        core=[with_bundle(m, spec) for m in core + wake.core],
        keda=[with_bundle(m, spec) for m in keda],
        monitoring=[with_bundle(m, spec) for m in monitoring],
    )
