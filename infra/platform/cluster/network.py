"""The VPC: private subnets across AZs plus endpoints so image and weight pulls skip the NAT."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import ArnFormat, RemovalPolicy, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.compliance.keys import rotating_key
from infra.settings import VpcSettings

#: Interface endpoints on the image-pull and node-bootstrap path (ECR API + registry, STS for
#: Pod Identity, EC2 for the autoscalers, CloudWatch Logs for the VPC flow logs), and Secrets
#: Manager, where the serving pods read the API key: inside the VPC CIDR their network policy
#: opens, and reachable without a NAT gateway.
INTERFACE_ENDPOINTS: dict[str, ec2.InterfaceVpcEndpointAwsService] = {
    "EcrApi": ec2.InterfaceVpcEndpointAwsService.ECR,
    "EcrDocker": ec2.InterfaceVpcEndpointAwsService.ECR_DOCKER,
    "Sts": ec2.InterfaceVpcEndpointAwsService.STS,
    "Ec2": ec2.InterfaceVpcEndpointAwsService.EC2,
    "Logs": ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS,
    "SecretsManager": ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
}


@dataclass(frozen=True)
class NetworkProps:
    """Inputs of the network."""

    settings: VpcSettings
    """New-VPC shape or existing VPC id."""
    cluster_name: str
    """Tags subnets for load balancers and Karpenter discovery."""


class Network(Construct):
    """A new VPC with S3/ECR endpoints, or an imported one (then endpoints are the owner's)."""

    def __init__(self, scope: Construct, construct_id: str, props: NetworkProps) -> None:
        super().__init__(scope, construct_id)
        s = props.settings
        if s.vpc_id is not None:
            self.vpc: ec2.IVpc = ec2.Vpc.from_lookup(self, "Vpc", vpc_id=s.vpc_id)
            self.private_subnets = ec2.SubnetSelection(
                subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
            )
            return
        azs = list(s.availability_zones) or None
        flow_logs = logs.LogGroup(
            self,
            "FlowLogs",
            retention=logs.RetentionDays.ONE_MONTH,
            encryption_key=self._flow_logs_key(),
        )
        vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(s.cidr),
            availability_zones=azs,
            max_azs=None if azs else 2,
            nat_gateways=s.nat_gateways,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24
                ),
                ec2.SubnetConfiguration(
                    name="private",
                    subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
                    if s.nat_gateways
                    else ec2.SubnetType.PRIVATE_ISOLATED,
                    cidr_mask=19,
                ),
            ],
            flow_logs={
                "all": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
                    traffic_type=ec2.FlowLogTrafficType.REJECT,
                )
            },
        )
        private = ec2.SubnetSelection(
            subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
            if s.nat_gateways
            else ec2.SubnetType.PRIVATE_ISOLATED
        )
        # Weights and images are many GB: S3 (ECR layers live in S3) through a free gateway.
        vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)
        for name, service in INTERFACE_ENDPOINTS.items():
            vpc.add_interface_endpoint(
                name, service=service, subnets=private, private_dns_enabled=True
            )
        for subnet in vpc.public_subnets:
            Tags.of(subnet).add("kubernetes.io/role/elb", "1")
        for subnet in vpc.select_subnets(subnet_group_name="private").subnets:
            Tags.of(subnet).add("kubernetes.io/role/internal-elb", "1")
            Tags.of(subnet).add("karpenter.sh/discovery", props.cluster_name)
        self.vpc = vpc
        #: Where the cluster and nodes go.
        self.private_subnets = private

    def _flow_logs_key(self) -> kms.Key:
        """A rotating KMS key for the flow-log group, usable by CloudWatch Logs for log groups of
        this account and region only (the key policy AWS documents for encrypting log data:
        https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html)."""
        stack = Stack.of(self)
        key = rotating_key(
            self,
            "FlowLogsKey",
            "VPC flow logs (CloudWatch Logs)",
            removal_policy=RemovalPolicy.RETAIN,
        )
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchLogsOfThisAccount",
                principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
                actions=[
                    "kms:Encrypt*",
                    "kms:Decrypt*",
                    "kms:ReEncrypt*",
                    "kms:GenerateDataKey*",
                    "kms:Describe*",
                ],
                resources=["*"],
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": stack.format_arn(
                            service="logs",
                            resource="log-group",
                            resource_name="*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    }
                },
            )
        )
        return key
