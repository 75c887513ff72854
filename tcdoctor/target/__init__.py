"""What is analysed: loading `path.py:function` (load.py), the Workload/TrainStep specs (workload.py),
faithful pristine copies (pristine.py) and who owns a frame (userframes.py). Imports only the base layer."""
