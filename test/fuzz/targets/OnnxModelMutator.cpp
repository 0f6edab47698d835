//===- OnnxModelMutator.cpp - structure-aware mutations of ONNX models ----===//
//
// libFuzzer's custom mutator for OnnxStructuredFuzzer. Byte flips mostly
// break the protobuf, so the importer's converters rarely see them; this
// parses the input as an onnx::ModelProto, changes it the way a careless
// exporter or a hostile file would, and serializes it again:
//   - a node's op type (to one kiln converts), its inputs (another value,
//     an omitted one, one fewer or more), its outputs (an existing name),
//     or its position (out of topological order), removal or duplication;
//   - attributes: boundary values for ints and floats, lists grown or
//     shrunk, the wrong attribute type, attributes the op's ONNX schema
//     names added with random values, attributes removed;
//   - initializers: dims (negative, zero, huge, one more or fewer), data
//     type, data truncated or moved between raw_data and typed fields;
//   - graph inputs and outputs: element type and dims;
//   - the opset version.
// Inputs that do not parse get libFuzzer's byte-level mutations, as does
// one mutation in eight, so the protobuf decoder stays fuzzed too. There is
// no Debian package of libprotobuf-mutator; a field-generic mutator would
// also not know which op types and attributes matter (docs/reliability.md).
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/OnnxImporter.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

using Rng = std::mt19937_64;

size_t pick(Rng &rng, size_t n) { return n == 0 ? 0 : rng() % n; }
bool oneIn(Rng &rng, unsigned n) { return rng() % n == 0; }

int64_t interestingInt(Rng &rng) {
  static const int64_t values[] = {0, 1, -1, 2, 3, -2, 7, 64, 1000, INT32_MAX, INT32_MIN,
                                   int64_t(1) << 32, INT64_MAX, INT64_MIN, INT64_MAX / 2};
  if (oneIn(rng, 3))
    return static_cast<int64_t>(pick(rng, 9)) - 4;
  return values[pick(rng, std::size(values))];
}

float interestingFloat(Rng &rng) {
  static const float values[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e-30f, 1e30f,
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN(),
                                 std::numeric_limits<float>::denorm_min()};
  return values[pick(rng, std::size(values))];
}

/// Every value name the graph defines (inputs, initializers, node outputs).
std::vector<std::string> valueNames(const onnx::GraphProto &graph) {
  std::vector<std::string> names;
  for (const auto &input : graph.input())
    names.push_back(input.name());
  for (const auto &init : graph.initializer())
    names.push_back(init.name());
  for (const auto &node : graph.node())
    for (const auto &output : node.output())
      names.push_back(output);
  return names;
}

void randomizeAttribute(onnx::AttributeProto &attr, onnx::AttributeProto::AttributeType type,
                        Rng &rng) {
  attr.set_type(type);
  switch (type) {
  case onnx::AttributeProto::INT:
    attr.set_i(interestingInt(rng));
    break;
  case onnx::AttributeProto::FLOAT:
    attr.set_f(interestingFloat(rng));
    break;
  case onnx::AttributeProto::INTS:
    attr.clear_ints();
    for (size_t k = pick(rng, 6); k > 0; --k)
      attr.add_ints(interestingInt(rng));
    break;
  case onnx::AttributeProto::FLOATS:
    attr.clear_floats();
    for (size_t k = pick(rng, 6); k > 0; --k)
      attr.add_floats(interestingFloat(rng));
    break;
  case onnx::AttributeProto::STRING: {
    static const char *strings[] = {"", "NOTSET", "SAME_UPPER", "VALID", "linear", "nearest",
                                    "constant", "reflect", "edge", "Tanh", "Relu", "none"};
    attr.set_s(strings[pick(rng, std::size(strings))]);
    break;
  }
  default:
    break;
  }
}

void mutateAttributes(onnx::NodeProto &node, Rng &rng) {
  const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(node.op_type());
  switch (pick(rng, 5)) {
  case 0: // an attribute the schema names, with a random value
    if (schema && !schema->attributes().empty()) {
      auto it = schema->attributes().begin();
      std::advance(it, pick(rng, schema->attributes().size()));
      onnx::AttributeProto *attr = nullptr;
      for (auto &existing : *node.mutable_attribute())
        if (existing.name() == it->first)
          attr = &existing;
      if (!attr) {
        attr = node.add_attribute();
        attr->set_name(it->first);
      }
      randomizeAttribute(*attr, it->second.type, rng);
    }
    return;
  case 1: // remove one
    if (node.attribute_size() > 0) {
      node.mutable_attribute()->SwapElements(pick(rng, node.attribute_size()),
                                             node.attribute_size() - 1);
      node.mutable_attribute()->RemoveLast();
    }
    return;
  case 2: // the wrong type under the right name
    if (node.attribute_size() > 0) {
      static const onnx::AttributeProto::AttributeType types[] = {
          onnx::AttributeProto::INT, onnx::AttributeProto::FLOAT, onnx::AttributeProto::INTS,
          onnx::AttributeProto::FLOATS, onnx::AttributeProto::STRING};
      randomizeAttribute(*node.mutable_attribute(pick(rng, node.attribute_size())),
                         types[pick(rng, std::size(types))], rng);
    }
    return;
  default: // a new value of the same type; for lists, one element changed or
           // one element more or fewer
    if (node.attribute_size() == 0)
      return;
    onnx::AttributeProto &attr = *node.mutable_attribute(pick(rng, node.attribute_size()));
    if (attr.type() == onnx::AttributeProto::INTS && attr.ints_size() > 0 && !oneIn(rng, 3)) {
      if (oneIn(rng, 2))
        attr.set_ints(pick(rng, attr.ints_size()), interestingInt(rng));
      else if (oneIn(rng, 2))
        attr.add_ints(interestingInt(rng));
      else
        attr.mutable_ints()->RemoveLast();
      return;
    }
    if (attr.type() == onnx::AttributeProto::FLOATS && attr.floats_size() > 0) {
      attr.set_floats(pick(rng, attr.floats_size()), interestingFloat(rng));
      return;
    }
    randomizeAttribute(attr, attr.type(), rng);
    return;
  }
}

void mutateNode(onnx::GraphProto &graph, Rng &rng) {
  if (graph.node_size() == 0)
    return;
  int index = static_cast<int>(pick(rng, graph.node_size()));
  onnx::NodeProto &node = *graph.mutable_node(index);
  std::vector<std::string> names = valueNames(graph);
  switch (pick(rng, 9)) {
  case 0: { // another op type kiln converts
    static const std::vector<std::string> types = kiln::frontend::supportedOnnxOpTypes();
    node.set_op_type(types[pick(rng, types.size())]);
    return;
  }
  case 1: // an input reads another value (possibly a later one: a cycle)
    if (node.input_size() > 0 && !names.empty())
      node.set_input(pick(rng, node.input_size()), names[pick(rng, names.size())]);
    return;
  case 2: // an input left out, or one input fewer or more
    if (node.input_size() > 0 && oneIn(rng, 2))
      node.set_input(pick(rng, node.input_size()), "");
    else if (node.input_size() > 0 && oneIn(rng, 2))
      node.mutable_input()->RemoveLast();
    else if (!names.empty())
      node.add_input(names[pick(rng, names.size())]);
    return;
  case 3: // an output named like an existing value
    if (node.output_size() > 0 && !names.empty())
      node.set_output(pick(rng, node.output_size()), names[pick(rng, names.size())]);
    return;
  case 4: // out of topological order
    if (graph.node_size() > 1)
      graph.mutable_node()->SwapElements(index, pick(rng, graph.node_size()));
    return;
  case 5: // removed
    graph.mutable_node()->SwapElements(index, graph.node_size() - 1);
    graph.mutable_node()->RemoveLast();
    return;
  case 6: { // duplicated, its outputs renamed so later nodes still read the original
    onnx::NodeProto copy = node;
    for (int k = 0; k < copy.output_size(); ++k)
      copy.set_output(k, copy.output(k) + "_dup");
    *graph.add_node() = copy;
    return;
  }
  default:
    mutateAttributes(node, rng);
    return;
  }
}

void mutateTensor(onnx::TensorProto &tensor, Rng &rng) {
  switch (pick(rng, 5)) {
  case 0:
    if (tensor.dims_size() > 0) {
      tensor.set_dims(pick(rng, tensor.dims_size()), interestingInt(rng));
      return;
    }
    [[fallthrough]];
  case 1:
    if (oneIn(rng, 2) && tensor.dims_size() > 0)
      tensor.mutable_dims()->RemoveLast();
    else
      tensor.add_dims(static_cast<int64_t>(pick(rng, 4)));
    return;
  case 2:
    tensor.set_data_type(static_cast<int32_t>(pick(rng, 24)));
    return;
  case 3: // data cut short
    if (tensor.has_raw_data() && !tensor.raw_data().empty())
      tensor.mutable_raw_data()->resize(pick(rng, tensor.raw_data().size()));
    else if (tensor.float_data_size() > 0)
      tensor.mutable_float_data()->Truncate(pick(rng, tensor.float_data_size()));
    else if (tensor.int64_data_size() > 0)
      tensor.mutable_int64_data()->Truncate(pick(rng, tensor.int64_data_size()));
    return;
  default: // raw bytes moved to the typed field (or garbage in it)
    if (tensor.has_raw_data()) {
      std::string raw = tensor.raw_data();
      tensor.clear_raw_data();
      for (size_t k = 0; k + 4 <= raw.size(); k += 4) {
        float value;
        std::memcpy(&value, raw.data() + k, 4);
        tensor.add_float_data(value);
      }
    } else {
      tensor.add_float_data(interestingFloat(rng));
    }
    return;
  }
}

void mutateValueInfo(onnx::ValueInfoProto &info, Rng &rng) {
  onnx::TypeProto_Tensor &type = *info.mutable_type()->mutable_tensor_type();
  if (oneIn(rng, 3)) {
    type.set_elem_type(static_cast<int32_t>(pick(rng, 24)));
    return;
  }
  onnx::TensorShapeProto &shape = *type.mutable_shape();
  if (shape.dim_size() > 0 && !oneIn(rng, 4)) {
    onnx::TensorShapeProto_Dimension &dim = *shape.mutable_dim(pick(rng, shape.dim_size()));
    if (oneIn(rng, 4))
      dim.set_dim_param("N");
    else
      dim.set_dim_value(interestingInt(rng));
  } else if (oneIn(rng, 2) && shape.dim_size() > 0) {
    shape.mutable_dim()->RemoveLast();
  } else {
    shape.add_dim()->set_dim_value(static_cast<int64_t>(pick(rng, 5)));
  }
}

void mutateModel(onnx::ModelProto &model, Rng &rng) {
  onnx::GraphProto &graph = *model.mutable_graph();
  switch (pick(rng, 10)) {
  case 0:
  case 1:
  case 2:
  case 3:
    mutateNode(graph, rng);
    return;
  case 4:
  case 5:
    if (graph.initializer_size() > 0) {
      mutateTensor(*graph.mutable_initializer(pick(rng, graph.initializer_size())), rng);
      return;
    }
    mutateNode(graph, rng);
    return;
  case 6:
    if (graph.input_size() > 0)
      mutateValueInfo(*graph.mutable_input(pick(rng, graph.input_size())), rng);
    return;
  case 7:
    if (graph.output_size() > 0)
      mutateValueInfo(*graph.mutable_output(pick(rng, graph.output_size())), rng);
    return;
  case 8: { // the opset
    static const int64_t versions[] = {1, 6, 7, 9, 11, 12, 13, 17, 18, 21, 23, 24, 1000};
    if (model.opset_import_size() == 0)
      model.add_opset_import();
    model.mutable_opset_import(0)->set_version(versions[pick(rng, std::size(versions))]);
    return;
  }
  default: // an output the graph never computes, or one fewer
    if (oneIn(rng, 2) && graph.output_size() > 0) {
      graph.mutable_output()->RemoveLast();
    } else {
      std::vector<std::string> names = valueNames(graph);
      onnx::ValueInfoProto &output = *graph.add_output();
      output.set_name(names.empty() || oneIn(rng, 3) ? "missing" : names[pick(rng, names.size())]);
      output.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    }
    return;
  }
}

size_t writeModel(const onnx::ModelProto &model, uint8_t *data, size_t maxSize) {
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.size() > maxSize)
    return 0;
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto model;
  if (oneIn(rng, 8) || !model.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, maxSize);
  for (size_t k = 1 + pick(rng, 3); k > 0; --k)
    mutateModel(model, rng);
  size_t written = writeModel(model, data, maxSize);
  return written ? written : LLVMFuzzerMutate(data, size, maxSize);
}

/// Crossover: a node of the other model spliced into this one.
extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1,
                                            const uint8_t *data2, size_t size2, uint8_t *out,
                                            size_t maxOutSize, unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto first, second;
  if (!first.ParseFromArray(data1, static_cast<int>(size1)) ||
      !second.ParseFromArray(data2, static_cast<int>(size2)) || second.graph().node_size() == 0)
    return 0;
  onnx::GraphProto &graph = *first.mutable_graph();
  *graph.add_node() = second.graph().node(pick(rng, second.graph().node_size()));
  graph.mutable_node()->SwapElements(graph.node_size() - 1, pick(rng, graph.node_size()));
  return writeModel(first, out, maxOutSize);
}
