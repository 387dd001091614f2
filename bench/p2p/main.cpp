#include "p2p.hpp"

#include "hdb/embedded_schema.hpp"

int main(int argc, char** argv) { return hdb::family_main(argc, argv, hdb::p2p::family(), hdb::embedded_schema()); }
