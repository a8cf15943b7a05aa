#!/bin/bash
torchrun --standalone --nproc_per_node 2 main.py "$@"
