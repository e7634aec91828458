"""`python -m trnspec`: every subcommand's flags, their parsing through the boundary, and what
it prints. No logic of its own: each command calls the layer that owns the work."""
