"""The CDK app's constructs, in layers: contracts and outputs (names both sides use), settings
(the deployment's typed configuration), compliance (cdk-nag, checkov, keys), the platform (cluster,
node pools, add-ons), the serving workload, and the app that composes them."""
