//===- SizeCodeTest.cpp - the postfix code of symbolic sizes --------------===//

#include "kiln/Reference/SizeCode.h"

#include <gtest/gtest.h>

#include <climits>

using kiln::ref::checkSizeCode;
using kiln::ref::evaluateSizeCode;
using kiln::ref::InputElementReader;
using kiln::ref::sizeCodeText;

namespace {

int64_t eval(std::vector<int64_t> code, std::vector<int64_t> symbols = {},
             const InputElementReader *read = nullptr) {
  int64_t value = -12345;
  std::string problem = evaluateSizeCode(code.data(), code.size(), symbols, read, value);
  EXPECT_EQ(problem, "") << "evaluating a well-formed code";
  return value;
}

std::string error(std::vector<int64_t> code, std::vector<int64_t> symbols = {},
                  const InputElementReader *read = nullptr) {
  int64_t value = 0;
  return evaluateSizeCode(code.data(), code.size(), symbols, read, value);
}

} // namespace

TEST(SizeCode, Arithmetic) {
  EXPECT_EQ(eval({1, 0, 0, 1, 2}, {7}), 8);                  // s0 + 1
  EXPECT_EQ(eval({1, 0, 1, 1, 3}, {6, 7}), 42);              // s0 * s1
  EXPECT_EQ(eval({0, -7, 0, 2, 4}), -4);                     // floordiv rounds down
  EXPECT_EQ(eval({0, -7, 0, 2, 5}), -3);                     // ceildiv rounds up
  EXPECT_EQ(eval({0, -7, 0, 3, 6}), 2);                      // mod is non-negative
  EXPECT_EQ(eval({0, LLONG_MIN, 0, 3, 4}), LLONG_MIN / 3 - 1); // no overflow
  EXPECT_EQ(eval({0, LLONG_MIN, 0, 3, 6}), 1);
  EXPECT_EQ(eval({0, 4, 0, 9, 7}), 4);                       // min
  EXPECT_EQ(eval({0, 4, 0, 9, 8}), 9);                       // max
  EXPECT_EQ(eval({0, 4, 0, 4, 9}), 1);                       // eq
  EXPECT_EQ(eval({0, 4, 0, 9, 10}), 1);                      // lt
  EXPECT_EQ(eval({0, 9, 0, 4, 10}), 0);
  EXPECT_EQ(eval({0, 1, 0, 5, 0, 6, 11}), 5);                // select
  EXPECT_EQ(eval({0, 0, 0, 5, 0, 6, 11}), 6);
}

TEST(SizeCode, InputElements) {
  std::vector<int64_t> data = {3, -1, 8};
  InputElementReader read = [&](int64_t input, int64_t element, int64_t &value,
                                std::string &error) {
    if (input != 1 || element >= 3) {
      error = "no such element";
      return false;
    }
    value = data[element];
    return true;
  };
  EXPECT_EQ(eval({12, 1, 2, 12, 1, 0, 3}, {}, &read), 24);
  EXPECT_EQ(error({12, 1, 5}, {}, &read), "no such element");
  // Without a reader, a code may not read inputs.
  EXPECT_EQ(error({12, 1, 0}), "a symbolic size reads an input where only size symbols may appear");
}

TEST(SizeCode, Refusals) {
  EXPECT_EQ(error({0, 1, 0, 0, 4}), "a symbolic size divides by 0");
  EXPECT_EQ(error({0, 1, 0, -2, 6}), "a symbolic size divides by -2");
  EXPECT_EQ(error({0, LLONG_MAX, 0, 2, 3}), "a symbolic size overflows");
  EXPECT_EQ(error({0, LLONG_MAX, 0, 1, 2}), "a symbolic size overflows");
  EXPECT_EQ(error({1, 2}, {1, 2}), "a symbolic size names symbol #2 of 2");
  EXPECT_EQ(error({1, -1}, {1}), "a symbolic size names symbol #-1 of 1");
  for (std::vector<int64_t> malformed : std::vector<std::vector<int64_t>>{
           {},                 // nothing
           {2},                // an operation on an empty stack
           {0, 1, 0, 2},       // two values left
           {0},                // a constant without its value
           {12, 0},            // an input without its element
           {0, 1, 0, 2, 11},   // select of two
           {13},               // no such instruction
           {-1}}) {
    EXPECT_EQ(checkSizeCode(malformed.data(), malformed.size(), 4, 4),
              "a symbolic size is malformed");
  }
  std::vector<int64_t> huge(kiln::ref::kMaxSizeCode + 1, 0);
  EXPECT_EQ(checkSizeCode(huge.data(), huge.size(), 0, 0), "a symbolic size is malformed");
  std::vector<int64_t> reads = {12, 3, 0};
  EXPECT_EQ(checkSizeCode(reads.data(), reads.size(), 0, 2),
            "a symbolic size reads input #3 element 0 of 2 inputs");
}

TEST(SizeCode, Text) {
  std::vector<std::string> symbols = {"batch", "seq"}, inputs = {"x", "shape"};
  auto text = [&](std::vector<int64_t> code) {
    return sizeCodeText(code.data(), code.size(), symbols, inputs);
  };
  EXPECT_EQ(text({1, 0}), "batch");
  EXPECT_EQ(text({1, 1, 0, 1, 2}), "seq + 1");
  EXPECT_EQ(text({1, 0, 0, 1, 2, 1, 1, 0, 1, 2, 3}), "(batch + 1) * (seq + 1)");
  EXPECT_EQ(text({12, 1, 0, 0, 1, 8}), "max(shape[0], 1)");
  EXPECT_EQ(text({12, 1, 0, 0, -1, 9, 0, 4, 1, 0, 11}), "select((shape[0] == -1), 4, batch)");
  EXPECT_EQ(text({12, 5, 0}), "?");
}

TEST(SizeCode, ScaledElements) {
  kiln::ref::InputElementReader ints = [](int64_t, int64_t, int64_t &, std::string &error) {
    error = "not an integer input";
    return false;
  };
  kiln::ref::FloatElementReader floats = [](int64_t input, int64_t element, double &value,
                                            std::string &) {
    value = element == 0 ? 1.5 : 0.6;
    return input == 0;
  };
  std::vector<int64_t> code = {13, 0, 0, 4}; // floor(scales[0] * 4)
  int64_t value = 0;
  EXPECT_EQ(kiln::ref::evaluateSizeCode(code.data(), code.size(), {}, &ints, value, &floats), "");
  EXPECT_EQ(value, 6);
  code = {13, 0, 1, 5}; // floor(0.6 * 5) = 3, as ONNX sizes a Resize
  EXPECT_EQ(kiln::ref::evaluateSizeCode(code.data(), code.size(), {}, &ints, value, &floats), "");
  EXPECT_EQ(value, 3);
  EXPECT_EQ(kiln::ref::evaluateSizeCode(code.data(), code.size(), {}, &ints, value),
            "a symbolic size reads a floating-point input it cannot here");
  std::vector<std::string> symbols, inputs = {"scales"};
  EXPECT_EQ(sizeCodeText(code.data(), code.size(), symbols, inputs), "floor(scales[1] * 5)");
  std::vector<int64_t> truncated = {13, 0, 1};
  EXPECT_EQ(checkSizeCode(truncated.data(), truncated.size(), 0, 1), "a symbolic size is malformed");
}

TEST(SizeCode, ValueElements) {
  // `14 v j`: element j of program value v, a length computed by a step;
  // only where the caller reads values (the loader, bindLengths).
  std::vector<int64_t> code = {14, 7, 0, 0, 1, 2};
  EXPECT_EQ(checkSizeCode(code.data(), code.size(), 0, 0, 8), "");
  EXPECT_NE(checkSizeCode(code.data(), code.size(), 0, 0, 7).find("reads value #7 element 0 of 7"),
            std::string::npos);
  EXPECT_NE(checkSizeCode(code.data(), code.size(), 0, 4).find("reads a computed value"),
            std::string::npos);
  std::vector<int64_t> negative = {14, 2, -1};
  EXPECT_NE(checkSizeCode(negative.data(), negative.size(), 0, 0, 8), "");
  InputElementReader value = [](int64_t v, int64_t element, int64_t &out, std::string &error) {
    if (v != 7 || element != 0) {
      error = "no such value";
      return false;
    }
    out = 41;
    return true;
  };
  int64_t out = 0;
  EXPECT_EQ(evaluateSizeCode(code.data(), code.size(), {}, nullptr, out, nullptr, &value), "");
  EXPECT_EQ(out, 42);
  // Without a value reader the code is refused, not read.
  EXPECT_NE(error(code), "");
  std::vector<int64_t> other = {14, 3, 0};
  EXPECT_EQ(evaluateSizeCode(other.data(), other.size(), {}, nullptr, out, nullptr, &value),
            "no such value");
  EXPECT_EQ(sizeCodeText(code.data(), code.size(), {}, {}), "value #7[0] + 1");
}
