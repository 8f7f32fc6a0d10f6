#include <gtest/gtest.h>
#include "ir/graph.h"
TEST(Smoke, OpList) { EXPECT_STREQ(dlakit::op_name(dlakit::OpKind::Conv), "Conv"); }
