import CCUDAShim
/// Compiles kernel modules: NVRTC to a CUBIN for the device's own architecture (docs/architecture.md §7), or, under the
/// emulator, the host C++ compiler to a shared object. Results are cached on disk under
/// `~/.cache/swifttorch/kernels` (or `$SWIFTTORCH_KERNEL_CACHE`, or `$XDG_CACHE_HOME/swifttorch/kernels`),
/// keyed by the source's hash, the architecture and the compiler's version, so a second run compiles nothing.
enum KernelCompiler {
    /// The emulator's compiler: `$CXX`, else `c++`.
    static var hostCompiler: String {
        if let c = getenv("CXX"), !String(cString: c).isEmpty { return String(cString: c) }
        return "c++"
    }

    /// Where compiled modules are kept, or nil when no folder can be made (then nothing is cached on disk).
    static let cacheDirectory: String? = {
        let env = ProcessInfo.processInfo.environment
        let dir: String
        if let d = env["SWIFTTORCH_KERNEL_CACHE"], !d.isEmpty { dir = d }
        else if let x = env["XDG_CACHE_HOME"], !x.isEmpty { dir = x + "/swifttorch/kernels" }
        else if let h = env["HOME"], !h.isEmpty { dir = h + "/.cache/swifttorch/kernels" }
        else { return nil }
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            return dir
        } catch { return nil }
    }()

    /// 64-bit FNV-1a of the text: stable across runs and platforms (Swift's `hashValue` is seeded per process).
    static func fingerprint(_ parts: [String]) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in parts {
            for b in part.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
            h = (h ^ 0xff) &* 0x0000_0100_0000_01b3
        }
        let hex = String(h, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    private static func readCache(_ path: String) -> [UInt8]? {
        guard let d = FileManager.default.contents(atPath: path), !d.isEmpty else { return nil }
        return [UInt8](d)
    }

    /// Writes atomically (temporary file + rename), so a concurrent run never reads half a module.
    private static func writeCache(_ path: String, _ bytes: [UInt8]) {
        let tmp = path + ".tmp\(getpid())"
        guard FileManager.default.createFile(atPath: tmp, contents: Data(bytes)) else { return }
        if rename(tmp, path) != 0 { unlink(tmp) }
    }

    /// NVRTC's version as "13.0", or nil when NVRTC is not loaded.
    static var nvrtcVersion: String? {
        var major: Int32 = 0, minor: Int32 = 0
        guard stcu_nvrtcVersion(&major, &minor) == 0 else { return nil }
        return "\(major).\(minor)"
    }

    /// Architectures this NVRTC can emit a CUBIN for (e.g. 80, 90).
    static var supportedArchitectures: [Int] {
        var n: Int32 = 0
        guard stcu_nvrtcGetNumSupportedArchs(&n) == 0, n > 0 else { return [] }
        var archs = [Int32](repeating: 0, count: Int(n))
        guard stcu_nvrtcGetSupportedArchs(&archs) == 0 else { return [] }
        return archs.map(Int.init)
    }

    /// Loads NVRTC on its own (no driver needed), for compiling without a GPU.
    static func loadNVRTC() throws {
        var buf = [CChar](repeating: 0, count: 1024)
        let r = buf.withUnsafeMutableBufferPointer { stcu_load_nvrtc($0.baseAddress!, $0.count) }
        if r != 0 { throw CUDAError.unavailable(String(cString: buf)) }
    }

    /// Compiles `source` with NVRTC to a CUBIN for `sm_<architecture>` (e.g. 90), or, when this NVRTC does not
    /// know that architecture, to PTX for the newest one it knows that is not newer (the driver finishes it).
    static func compileForDevice(_ source: String, name: String, architecture: Int) throws -> [UInt8] {
        guard let version = nvrtcVersion else { throw CUDAError.unavailable("NVRTC is not loaded") }
        let known = supportedArchitectures
        let cubin = known.isEmpty || known.contains(architecture)
        let target = cubin ? architecture : (known.filter { $0 <= architecture }.max() ?? known.min() ?? architecture)
        let key = fingerprint([source, "\(target)", version, cubin ? "cubin" : "ptx"])
        let path = cacheDirectory.map { "\($0)/\(name)-sm_\(target)-\(key).\(cubin ? "cubin" : "ptx")" }
        if let path, let cached = readCache(path) { return cached }
        var program: nvrtcProgram? = nil
        var r = stcu_nvrtcCreateProgram(&program, source, name + ".cu", 0, nil, nil)
        guard r == 0, let program else { throw CUDAError.call("nvrtcCreateProgram", code: r, message: String(cString: stcu_nvrtcGetErrorString(r))) }
        defer { var p: nvrtcProgram? = program; _ = stcu_nvrtcDestroyProgram(&p) }
        let options = ["--gpu-architecture=\(cubin ? "sm" : "compute")_\(target)", "--std=c++17"]
        var cOptions = options.map { strdup($0) }
        defer { cOptions.forEach { free($0) } }
        r = cOptions.withUnsafeMutableBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buf.count) {
                stcu_nvrtcCompileProgram(program, Int32(buf.count), $0)
            }
        }
        if r != 0 {
            var logSize = 0
            _ = stcu_nvrtcGetProgramLogSize(program, &logSize)
            var log = [CChar](repeating: 0, count: Swift.max(logSize, 1))
            _ = stcu_nvrtcGetProgramLog(program, &log)
            throw CUDAError.compilation(kernel: name, log: String(cString: log))
        }
        var size = 0
        var bytes: [UInt8]
        if cubin {
            _ = stcu_nvrtcGetCUBINSize(program, &size)
            bytes = [UInt8](repeating: 0, count: size)
            r = bytes.withUnsafeMutableBufferPointer { $0.baseAddress!.withMemoryRebound(to: CChar.self, capacity: size) { stcu_nvrtcGetCUBIN(program, $0) } }
        } else {
            _ = stcu_nvrtcGetPTXSize(program, &size)
            bytes = [UInt8](repeating: 0, count: size)
            r = bytes.withUnsafeMutableBufferPointer { $0.baseAddress!.withMemoryRebound(to: CChar.self, capacity: size) { stcu_nvrtcGetPTX(program, $0) } }
        }
        if r != 0 { throw CUDAError.call("nvrtcGetCUBIN", code: r, message: String(cString: stcu_nvrtcGetErrorString(r))) }
        if let path { writeCache(path, bytes) }
        return bytes
    }

    /// Compiles `source` for the host emulator; returns the shared object's path (NUL-terminated bytes).
    static func compileForHost(_ source: String, name: String) throws -> [UInt8] {
        let key = fingerprint([source, hostCompiler])
        let dir = cacheDirectory ?? PathString.temporaryDirectory()
        let lib = "\(dir)/\(name)-host-\(key).so"
        if !FileManager.default.fileExists(atPath: lib) {
            let src = "\(dir)/\(name)-host-\(key).\(getpid()).cpp"
            guard FileManager.default.createFile(atPath: src, contents: Data(source.utf8)) else {
                throw CUDAError.compilation(kernel: name, log: "cannot write \(src)")
            }
            defer { unlink(src) }
            let tmp = lib + ".tmp\(getpid())"
            let p = ChildProcess(executable: "/usr/bin/env",
                                 arguments: [hostCompiler, "-std=c++17", "-O1", "-w", "-shared", "-fPIC", "-x", "c++", src, "-o", tmp],
                                 standardOutput: .pipe, standardError: .pipe)
            do { try p.run() } catch { throw CUDAError.compilation(kernel: name, log: "cannot run \(hostCompiler): \(error)") }
            let log = String(decoding: p.readToEnd(), as: UTF8.self)
            if p.wait() != .exited(0) { unlink(tmp); throw CUDAError.compilation(kernel: name, log: log) }
            if rename(tmp, lib) != 0 { unlink(tmp) }
        }
        return Array(lib.utf8) + [0]
    }
}

extension CUDADeviceContext {
    /// The kernel `id`, loading (and if need be compiling) its module at first use.
    @inline(__always) func function(_ id: KernelID) -> CUfunction {
        if let f = functions[id.slot] { return f }
        return loadModule(id)
    }

    @inline(never) private func loadModule(_ id: KernelID) -> CUfunction {
        CUDAModuleLoader.lock.lock()
        defer { CUDAModuleLoader.lock.unlock() }
        if let f = functions[id.slot] { return f }
        let m = KernelCatalog.module(id.family, id.dtype)
        guard m.functions[id.function] != nil else {
            preconditionFailure("\(id.family.name) kernel \(id.function): not implemented for '\(id.dtype.name)' on 'CUDA'")
        }
        let emulated = CUDARuntime.isEmulated
        let source = KernelCatalog.source(m, family: id.family, host: emulated)
        let image: [UInt8]
        do {
            image = emulated ? try KernelCompiler.compileForHost(source, name: m.name)
                             : try KernelCompiler.compileForDevice(source, name: m.name, architecture: major * 10 + minor)
        } catch {
            preconditionFailure("\(m.name): \(error)")
        }
        bind()
        var module: CUmodule? = nil
        CUDARuntime.check(image.withUnsafeBytes { stcu_dev_module_load(&module, $0.baseAddress) }, "cuModuleLoadData(\(m.name))")
        for (index, name) in m.functions {
            var f: CUfunction? = nil
            CUDARuntime.check(stcu_dev_get_function(&f, module, name), "cuModuleGetFunction(\(name))")
            functions[KernelID(family: id.family, dtype: id.dtype, function: index).slot] = f
        }
        return functions[id.slot]!
    }
}

enum CUDAModuleLoader {
    static let lock = PosixLock()
}
