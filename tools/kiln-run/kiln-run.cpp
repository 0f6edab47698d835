//===- kiln-run.cpp - run a .kx executable --------------------------------===//

#include "RunMain.h"

int main(int argc, char **argv) { return kiln::tools::runMain(argc, argv, nullptr); }
