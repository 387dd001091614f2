#include "overlap.hpp"

int main(int argc, char** argv) { return hdb::family_main(argc, argv, hdb::overlap::family()); }
