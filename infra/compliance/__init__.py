"""What the compliance scanners see and why: cdk-nag acknowledgements with reasons, checkov skip
annotations beside the resources they cover, and the rotating KMS keys every stack uses."""
