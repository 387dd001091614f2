#include "catch_compat.hpp"
#include "hdb/util/lists.hpp"

using strings = std::vector<std::string>;

TEST_CASE("split_list keeps every item, empty ones included, trimmed", "[lists]") {
  CHECK(hdb::split_list("a,b,c") == strings{"a", "b", "c"});
  CHECK(hdb::split_list(" a , b\t,c ") == strings{"a", "b", "c"});
  CHECK(hdb::split_list("a,,b") == strings{"a", "", "b"});
  CHECK(hdb::split_list("a,") == strings{"a", ""});
  CHECK(hdb::split_list(",a") == strings{"", "a"});
  CHECK(hdb::split_list(" , ") == strings{"", ""});
  CHECK(hdb::split_list("") == strings{""});
  CHECK(hdb::split_list("single") == strings{"single"});
}

TEST_CASE("split_list takes another separator", "[lists]") {
  CHECK(hdb::split_list("4K:1M:x2", ':') == strings{"4K", "1M", "x2"});
  CHECK(hdb::split_list("a=1;b=2", ';') == strings{"a=1", "b=2"});
}

TEST_CASE("split_nonempty drops empty items", "[lists]") {
  CHECK(hdb::split_nonempty("a, ,b,") == strings{"a", "b"});
  CHECK(hdb::split_nonempty("").empty());
  CHECK(hdb::split_nonempty(",,").empty());
  CHECK(hdb::split_nonempty("0,1", ',') == strings{"0", "1"});
}

TEST_CASE("join_list is the inverse of split_list", "[lists]") {
  CHECK(hdb::join_list({"a", "b", "c"}) == "a,b,c");
  CHECK(hdb::join_list({"base1", "base2"}, ", ") == "base1, base2");
  CHECK(hdb::join_list({"x"}, "; ") == "x");
  CHECK(hdb::join_list({}).empty());
  CHECK(hdb::join_list({"a", "", "b"}) == "a,,b");
  CHECK(hdb::split_list(hdb::join_list({"a", "", "b"})) == strings{"a", "", "b"});
}
