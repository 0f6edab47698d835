//===- EmuLibrary.cpp - generated kernels built for cuda-emu --------------===//

#include "kiln/CodeGen/EmuLibrary.h"

#include "kiln/CodeGen/CompileCache.h"
#include "kiln/IR/SymbolicSizes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <map>

using namespace mlir;
using namespace mlir::kiln;

std::string mlir::kiln::emuLibrarySource(const std::vector<GeneratedKernel> &kernels,
                                         const EmuBuild &build) {
  // The steps launching each kernel (a shared one has several).
  std::map<std::string, std::vector<unsigned>> stepsOf;
  for (const GeneratedKernel &kernel : kernels)
    if (!kernel.name.empty())
      stepsOf[kernel.name].push_back(kernel.step);
  std::string s = "// kiln: generated kernels for cuda-emu (the same text NVRTC compiles)\n";
  if (build.profile) // kiln-run --profile looks for it
    s += "extern \"C\" const int kiln_emu_traced = 1;\n";
  for (const GeneratedKernel &kernel : kernels) {
    if (kernel.name.empty() || kernel.sameAs >= 0) // shared kernels appear once
      continue;
    s += "\n" + kernel.source;
    s += "\nextern \"C\" void kiln_emu_thread_" + kernel.name + "(void *const *args) {\n  " +
         kernel.name + "(";
    for (size_t k = 0; k < kernel.paramTypes.size(); ++k)
      s += (k ? ", " : "") + std::string("(") + kernel.paramTypes[k] + ")args[" +
           std::to_string(k) + "]";
    // Sizes come as pointers to their values, as cudaLaunchKernel takes them.
    for (size_t k = 0; k < kernel.sizeArgs.size(); ++k)
      s += ", *(const long long *)args[" + std::to_string(kernel.paramTypes.size() + k) + "]";
    s += ");\n}\n";
    // What the text was generated for (element counts are literals in it):
    // grid, block; the parameter count, then each parameter's bytes and
    // dtype; the step input positions passed; the steps launching it.
    bool symbolic = !kernel.gridCode.empty();
    std::vector<long long> record = {symbolic ? -1 : static_cast<long long>(kernel.gridBlocks),
                                     kernel.blockThreads,
                                     static_cast<long long>(kernel.paramBytes.size())};
    for (size_t k = 0; k < kernel.paramBytes.size(); ++k) {
      record.push_back(kernel.paramBytes[k]);
      record.push_back(kernel.paramDTypes[k]);
    }
    record.push_back(static_cast<long long>(kernel.inputArgs.size()));
    record.insert(record.end(), kernel.inputArgs.begin(), kernel.inputArgs.end());
    const std::vector<unsigned> &steps = stepsOf[kernel.name];
    record.push_back(static_cast<long long>(steps.size()));
    record.insert(record.end(), steps.begin(), steps.end());
    auto joined = [](const std::vector<long long> &values) {
      return llvm::join(llvm::map_range(values, [](long long v) { return std::to_string(v); }),
                        ", ");
    };
    s += "extern \"C\" const long long kiln_emu_launch_" + kernel.name + "[] = {" +
         joined(record) + "};\n";
    // Over symbolic sizes (-1 above where a size code stands): the size
    // parameters' codes, the grid's, then each buffer's bytes' (0 codes for
    // a static one), each code after its length.
    if (symbolic) {
      std::vector<long long> sizes = {static_cast<long long>(kernel.sizeArgs.size())};
      auto append = [&](llvm::ArrayRef<int64_t> code) {
        sizes.push_back(static_cast<long long>(code.size()));
        sizes.insert(sizes.end(), code.begin(), code.end());
      };
      for (AffineExpr size : kernel.sizeArgs) {
        llvm::SmallVector<int64_t> code;
        appendSizeCode(size, code);
        append(code);
      }
      append(kernel.gridCode);
      for (const std::vector<int64_t> &code : kernel.paramByteCodes)
        append(code);
      s += "extern \"C\" const long long kiln_emu_sizes_" + kernel.name + "[] = {" +
           joined(sizes) + "};\n";
    }
    // Its dynamic shared memory (absent: none), apart so that the record
    // above keeps its layout.
    if (kernel.dynamicSharedBytes)
      s += "extern \"C\" const long long kiln_emu_shared_" + kernel.name + " = " +
           std::to_string(kernel.dynamicSharedBytes) + ";\n";
    if (build.profile) {
      // For the profile: sm_90 registers and shared bytes (-1: unknown),
      // FLOPs per launch, Tensor Core work.
      auto found = build.resources.find(kernel.name);
      std::pair<int, int> resources =
          found == build.resources.end() ? std::make_pair(-1, -1) : found->second;
      // (FLOPs -1: over symbolic sizes, per run from kiln_emu_flops_K's code.)
      s += "extern \"C\" const long long kiln_emu_profile_" + kernel.name + "[] = {" +
           joined({resources.first, resources.second,
                   kernel.flopsCode.empty() ? static_cast<long long>(kernel.flops) : -1,
                   kernel.tensorCoreWork ? 1 : 0}) +
           "};\n";
      if (!kernel.flopsCode.empty()) {
        std::vector<long long> code = {static_cast<long long>(kernel.flopsCode.size())};
        code.insert(code.end(), kernel.flopsCode.begin(), kernel.flopsCode.end());
        s += "extern \"C\" const long long kiln_emu_flops_" + kernel.name + "[] = {" +
             joined(code) + "};\n";
      }
    }
  }
  return s;
}

std::string mlir::kiln::checkEmuSanitizers(const std::string &sanitizers) {
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(sanitizers).split(names, ',');
  for (llvm::StringRef name : names)
    if (name != "address" && name != "undefined")
      return "unknown sanitizer '" + name.str() + "' (the cuda-emu kernels take address, "
             "undefined or both, comma-separated)";
  return "";
}

bool mlir::kiln::buildEmuLibrary(const std::vector<GeneratedKernel> &kernels,
                                 const EmuBuild &build, std::string &sharedObject,
                                 std::string &error, bool *cached) {
  const std::string &sanitizers = build.sanitizers;
  if (cached)
    *cached = false;
  llvm::SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("kiln-emu", dir)) {
    error = "cannot create a temporary folder: " + ec.message();
    return false;
  }
  // The folder goes whichever way this returns.
  auto removeDir = llvm::make_scope_exit([&] { llvm::sys::fs::remove_directories(dir); });
  auto path = [&](const char *name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  std::string source = path("kernels.cu"), object = path("kernels.so"), log = path("log.txt");
  std::string text = emuLibrarySource(kernels, build);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(source, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      error = "cannot write '" + source + "': " + ec.message();
      return false;
    }
    os << text;
    os.close();
    if (os.has_error()) {
      os.clear_error();
      error = "cannot write '" + source + "'";
      return false;
    }
  }
  const char *override = std::getenv("KILN_HOST_CXX");
  std::string compiler = override && *override ? override : "";
  // Sanitized kernels call into the sanitizer runtime kiln-run carries,
  // which is clang's: build them with clang.
  std::vector<llvm::StringRef> candidates = {"c++"};
  // clang: the sanitizer runtime kiln-run carries is clang's, and only
  // clang traces loads and stores.
  if (!sanitizers.empty() || build.profile)
    candidates = {"clang++-19", "clang++"};
  for (llvm::StringRef name : candidates) {
    if (!compiler.empty())
      break;
    if (auto found = llvm::sys::findProgramByName(name))
      compiler = *found;
  }
  if (compiler.empty()) {
    error = "no host C++ compiler (" + llvm::join(candidates, " or ") +
            ") on PATH to build the cuda-emu kernels; set KILN_HOST_CXX";
    return false;
  }
  std::string header = std::string(KILN_INCLUDE_DIR) + "/kiln/CudaEmu/cuda_emu.h";
  std::vector<llvm::StringRef> args = {compiler, "-std=c++17", "-O2", "-fPIC", "-shared",
                                       "-fno-math-errno"};
  std::string sanitizeFlag = "-fsanitize=" + sanitizers;
  if (!sanitizers.empty())
    for (llvm::StringRef arg : {llvm::StringRef(sanitizeFlag), llvm::StringRef("-fno-sanitize-recover=all"),
                                llvm::StringRef("-fno-omit-frame-pointer"),
                                llvm::StringRef("-gline-tables-only")})
      args.push_back(arg);
  if (build.profile) {
    // Every load and store calls the emulator's hook. Unvectorized: each
    // source access stays one access per thread, as on the GPU (16-byte
    // ones go through kiln_load_vec/kiln_store_vec).
    for (const char *arg : {"-fsanitize-coverage=func,trace-loads,trace-stores", "-fno-vectorize",
                            "-fno-slp-vectorize"})
      args.push_back(arg);
  }
#ifdef KILN_CUDA_INCLUDE_DIR
  // __half and __nv_bfloat16 come from the toolkit's headers.
  args.push_back("-I" KILN_CUDA_INCLUDE_DIR);
#endif
  for (llvm::StringRef arg : {llvm::StringRef("-x"), llvm::StringRef("c++"),
                              llvm::StringRef("-include"), llvm::StringRef(header)})
    args.push_back(arg);
  // The source comes on stdin: its temporary path would land in the
  // library (the file symbol, the sanitizers' source locations, and so the
  // build ID), and the same model must give a byte-identical executable.
  args.push_back("-");
  args.push_back("-o");
  args.push_back(object);
  // The cache key: the compiler (and its size and time, for its version),
  // its flags, the emulation headers and the text.
  std::vector<std::string> keyParts = {"cuda-emu", compiler, text};
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(compiler, status))
    keyParts.push_back(std::to_string(status.getSize()) + "@" +
                       std::to_string(status.getLastModificationTime().time_since_epoch().count()));
  for (const char *name : {"cuda_emu.h", "Wmma.h", "Profile.h"}) {
    auto headerText =
        llvm::MemoryBuffer::getFile(std::string(KILN_INCLUDE_DIR) + "/kiln/CudaEmu/" + name);
    keyParts.push_back(headerText ? (*headerText)->getBuffer().str() : "");
  }
  for (size_t k = 1; k + 3 < args.size(); ++k) // the flags, not the temporary paths
    keyParts.push_back(args[k].str());
  ::kiln::codegen::CompileCache cache = ::kiln::codegen::CompileCache::fromEnvironment();
  std::string key = ::kiln::codegen::CompileCache::key(keyParts);
  if (std::optional<std::string> hit = cache.get(key, "so")) {
    sharedObject = std::move(*hit);
    if (cached)
      *cached = true;
    return true;
  }
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(source), llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(compiler, args, std::nullopt, redirects, 0, 0, &message);
  bool ok = rc == 0;
  if (ok) {
    auto buffer = llvm::MemoryBuffer::getFile(object, /*IsText=*/false);
    ok = static_cast<bool>(buffer);
    if (ok) {
      sharedObject = (*buffer)->getBuffer().str();
      cache.put(key, "so", sharedObject);
    } else
      error = "cannot read the built kernels: " + buffer.getError().message();
  } else {
    auto output = llvm::MemoryBuffer::getFile(log);
    error = "the host compiler failed to build the cuda-emu kernels" +
            (message.empty() ? std::string() : " (" + message + ")") + ":\n" +
            (output ? (*output)->getBuffer().str() : std::string());
  }
  return ok;
}
