"""TrainCheck with a C++ engine."""
