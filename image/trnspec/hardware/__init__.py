"""Facts about the hardware and the models that run on it: the Trn2 topology table, model shapes,
drafter shapes, HBM sizing, replicas per node (packing) and instance prices. Pure arithmetic over
tables, read alike by the engine, the planner and the CDK app."""
