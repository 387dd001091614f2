#include "sync.hpp"

#include "hdb/embedded_schema.hpp"

int main(int argc, char** argv) { return hdb::family_main(argc, argv, hdb::sync::family(), hdb::embedded_schema()); }
