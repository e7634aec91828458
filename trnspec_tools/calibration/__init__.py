"""Calibration: measure the speculative arm against its plain twin on the same hardware and prompts.

Order of work (`python -m trnspec_tools calibrate run`, the calibration Job's command):
1. `prompts`: the user's JSONL prompt file (a path or s3://BUCKET/KEY), else the shipped set;
2. `measure`: wait until both arms answer, then at every concurrency level alternate the arms in
   ABBA rounds (`trnspec_tools.ab.order`), each run one `bench.run.run_level` (the benchmark's
   own runner);
3. `summary`: per arm and level the figures with their spread over rounds, status ok or failed
   (a failed arm is never a slow one), and the verdict of the A/B core
   (`trnspec_tools.ab.comparison`): which arm is cheaper per 1M output tokens, or undecided;
4. `rows`: the same measurements as rows of the Trn2 data file (`trnspec fit --add`,
   `plan-deploy --measured`);
5. `store`: calibration.json and trn2_rows.yaml to a directory and to
   s3://BUCKET/calibration/<UTC stamp>/.
`calibrate fetch --stack NAME` brings the newest run home (`fetch`); `calibrate local` runs the
same loop against two local CPU servers with moto standing in for the bucket (`local`).
"""
