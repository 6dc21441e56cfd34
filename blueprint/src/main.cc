#include "cli.h"

int main(int argc, char** argv) { return attribution::blueprint::run_cli(argc, argv); }
