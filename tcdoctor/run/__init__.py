"""Running an analysis: the parent launches children; each child runs a Session and streams phases."""
