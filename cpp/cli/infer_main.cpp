// traincheck-infer: see infer/infer_command.h.
#include <iostream>

#include "infer/infer_command.h"

int main(int argc, char** argv) { return traincheck::run_infer_command(argc, argv, std::cerr); }
