#include "standin.hpp"

#include "hdb/embedded_schema.hpp"

int main(int argc, char** argv) { return hdb::family_main(argc, argv, hdb::standin::family(), hdb::embedded_schema()); }
