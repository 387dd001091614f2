#include "allreduce.hpp"

int main(int argc, char** argv) { return hdb::family_main(argc, argv, hdb::allreduce::family()); }
