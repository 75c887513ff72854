"""The report data: the Report (model.py), its typed sections (sections/), the phase registry
(phases/), JSON encoding, the distributed section and merge, break gains, check and diff. Imports
only the base layer: the verdict, the renderers and the pipeline read it from above."""
