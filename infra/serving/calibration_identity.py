"""The calibration Job's permissions (its service account `<name>-calibration`, only while
`serving.calibration` is set): write its results under calibration/, list that prefix, read the
prompt file it is given, and read the API key when the servers require one. Nothing else in the
bucket: not the models, not the compile cache."""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3

from infra.serving.api_key import ApiKeySecret
from infra.serving.identity import READ_OBJECT_ACTIONS, WRITE_OBJECT_ACTIONS
from infra.settings.calibration import CalibrationSettings

#: Where calibration runs are written (trnspec_tools.calibration.store.PREFIX).
CALIBRATION_PREFIX = "calibration/"


def calibration_statements(
    bucket: s3.IBucket,
    key: kms.IKey,
    calibration: CalibrationSettings,
    api_key: ApiKeySecret | None = None,
) -> list[iam.PolicyStatement]:
    readable = [bucket.arn_for_objects(f"{CALIBRATION_PREFIX}*")]
    if calibration.prompts_key and not calibration.prompts_key.startswith(CALIBRATION_PREFIX):
        readable.append(bucket.arn_for_objects(calibration.prompts_key))
    return [
        iam.PolicyStatement(
            sid="WriteCalibrationResults",
            actions=WRITE_OBJECT_ACTIONS,
            resources=[bucket.arn_for_objects(f"{CALIBRATION_PREFIX}*")],
        ),
        iam.PolicyStatement(
            sid="ReadCalibrationAndPrompts", actions=READ_OBJECT_ACTIONS, resources=readable
        ),
        iam.PolicyStatement(
            sid="ListCalibrationPrefix",
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{CALIBRATION_PREFIX}*"]}},
        ),
        iam.PolicyStatement(
            sid="BucketKeyViaS3",
            actions=["kms:Decrypt", "kms:GenerateDataKey"],
            resources=[key.key_arn],
            conditions={"StringEquals": {"kms:ViaService": f"s3.{Aws.REGION}.amazonaws.com"}},
        ),
        *(api_key.read_statements() if api_key is not None else []),
    ]
