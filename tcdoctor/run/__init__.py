"""Running an analysis: the parent launches children; each child runs a PhaseRunner and streams phases."""
