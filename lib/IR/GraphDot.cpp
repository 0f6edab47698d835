//===- GraphDot.cpp - the graph as a Graphviz picture ---------------------===//

#include "kiln/IR/GraphDot.h"

#include "kiln/IR/KilnOps.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

std::string escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

/// "f32[1,32,64]" (the layout and device show only when not the default).
std::string typeLabel(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return "";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << tensor.getElementType() << "[";
  llvm::interleave(tensor.getShape(), os,
                   [&](int64_t d) { ShapedType::isDynamic(d) ? os << "?" : os << d; }, ",");
  os << "]";
  if (auto encoding = llvm::dyn_cast_or_null<TensorEncodingAttr>(tensor.getEncoding())) {
    if (!encoding.isRowMajor())
      os << " " << encoding.getLayoutString();
    if (encoding.getDeviceKind() != DeviceKind::CPU)
      os << " @" << encoding.getDeviceString();
  }
  return s;
}

std::string lineLabel(Operation *op) {
  if (auto loc = llvm::dyn_cast<FileLineColLoc>(op->getLoc()))
    return "line " + std::to_string(loc.getLine());
  if (auto loc = llvm::dyn_cast<NameLoc>(op->getLoc()))
    return loc.getName().str();
  return "";
}

const char *kindColour(FusionKind kind) {
  switch (kind) {
  case FusionKind::Loop:
    return "#e3f2fd";
  case FusionKind::Reduction:
    return "#e8f5e9";
  case FusionKind::MatmulEpilogue:
    return "#fff3e0";
  case FusionKind::ConvEpilogue:
    return "#fbe9e7";
  case FusionKind::Horizontal:
    return "#f3e5f5";
  case FusionKind::Attention:
    return "#fffde7";
  }
  return "#eeeeee";
}

class DotWriter {
public:
  DotWriter(func::FuncOp func, llvm::raw_ostream &os) : func(func), os(os) {}

  void write() {
    os << "digraph \"" << escape(func.getName()) << "\" {\n"
       << "  rankdir=TB;\n"
       << "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
          "fontname=\"Helvetica\", fontsize=10];\n"
       << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
    for (BlockArgument arg : func.getArguments()) {
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "kiln.name");
      std::string id = "input" + std::to_string(arg.getArgNumber());
      os << "  " << id << " [shape=ellipse, fillcolor=\"#eceff1\", label=\""
         << escape(name ? name.getValue() : llvm::StringRef(id)) << "\\n"
         << escape(typeLabel(arg.getType())) << "\"];\n";
      source[arg] = id;
    }
    unsigned regionIndex = 0;
    for (Operation &op : func.getBody().front()) {
      if (llvm::isa<ConstantOp, WeightOp>(op))
        continue;
      if (auto region = llvm::dyn_cast<FusionOp>(op)) {
        writeRegion(region, regionIndex++);
        continue;
      }
      if (auto ret = llvm::dyn_cast<func::ReturnOp>(op)) {
        for (auto [k, value] : llvm::enumerate(ret.getOperands())) {
          auto name = func.getResultAttrOfType<StringAttr>(k, "kiln.name");
          std::string id = "output" + std::to_string(k);
          os << "  " << id << " [shape=ellipse, fillcolor=\"#eceff1\", label=\""
             << escape(name ? name.getValue() : llvm::StringRef(id)) << "\"];\n";
          edge(value, id);
        }
        continue;
      }
      writeOp(&op, "  ");
    }
    os << "}\n";
  }

private:
  std::string writeOp(Operation *op, llvm::StringRef indent) {
    std::string id = "op" + std::to_string(nextId++);
    std::string label = op->getName().stripDialect().str();
    if (op->getNumResults() > 0)
      label += "\\n" + escape(typeLabel(op->getResult(0).getType()));
    std::string line = lineLabel(op);
    if (!line.empty())
      label += "\\n" + escape(line);
    os << indent << id << " [label=\"" << label << "\"];\n";
    for (Value operand : op->getOperands())
      edge(operand, id);
    for (Value result : op->getResults())
      source[result] = id;
    return id;
  }

  void writeRegion(FusionOp region, unsigned index) {
    Block &body = region.getBody().front();
    for (auto [input, arg] : llvm::zip(region.getInputs(), body.getArguments()))
      alias[arg] = input;
    os << "  subgraph cluster_" << index << " {\n"
       << "    label=\"" << stringifyFusionKind(region.getKind()) << " #" << index << "\";\n"
       << "    style=\"rounded,filled\"; fillcolor=\"" << kindColour(region.getKind())
       << "\"; fontname=\"Helvetica\"; fontsize=11;\n";
    for (Operation &op : body.without_terminator())
      if (!llvm::isa<ConstantOp>(op))
        writeOp(&op, "    ");
    os << "  }\n";
    auto yield = llvm::cast<YieldOp>(body.getTerminator());
    for (auto [result, yielded] : llvm::zip(region.getResults(), yield.getValues()))
      alias[result] = yielded;
  }

  /// An edge from whatever computes `value` to node `to`; values from
  /// weights and constants have no node.
  void edge(Value value, const std::string &to) {
    while (alias.count(value))
      value = alias[value];
    auto it = source.find(value);
    if (it == source.end())
      return;
    os << "  " << it->second << " -> " << to << ";\n";
  }

  func::FuncOp func;
  llvm::raw_ostream &os;
  unsigned nextId = 0;
  llvm::DenseMap<Value, std::string> source;
  /// Region block arguments to the values they stand for, and region
  /// results to the body values they yield.
  llvm::DenseMap<Value, Value> alias;
};

} // namespace

void mlir::kiln::writeGraphDot(func::FuncOp func, llvm::raw_ostream &os) {
  DotWriter(func, os).write();
}
