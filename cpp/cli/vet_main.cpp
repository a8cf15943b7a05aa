// traincheck-vet: see pack/vet_command.h.
#include <iostream>

#include "pack/vet_command.h"

int main(int argc, char** argv) { return traincheck::run_vet_command(argc, argv, std::cerr); }
