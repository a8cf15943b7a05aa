// traincheck-check: see check/check_command.h.
#include <iostream>

#include "check/check_command.h"

int main(int argc, char** argv) { return traincheck::run_check_command(argc, argv, std::cerr); }
