#include "allreduce.hpp"

#include "hdb/embedded_schema.hpp"

int main(int argc, char** argv) { return hdb::family_main(argc, argv, hdb::allreduce::family(), hdb::embedded_schema()); }
