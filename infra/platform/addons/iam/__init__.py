"""Each add-on's IAM policy statements, one module per add-on (as cdk-eks-blueprints keeps
`lib/addons/<name>/iam.ts`): declarative data, scoped to this cluster, region and account."""
