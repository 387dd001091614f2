#include "p2p.hpp"

int main(int argc, char** argv) { return hdb::family_main(argc, argv, hdb::p2p::family()); }
