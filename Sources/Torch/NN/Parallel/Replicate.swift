@_spi(Reflection) import Swift
import CTorchKernels

/// PyTorch's `torch.nn.parallel.replicate`: copies of a module tree on other devices whose parameters are
/// differentiable copies of the originals, so gradients computed through a replica flow back into the original
/// parameters (PyTorch's `Broadcast` forward and `ReduceAddCoalesced` backward; here each replica parameter is
/// recorded as a `BroadcastBackward` node over its original, and the autograd engine sums the replicas'
/// contributions when it accumulates the leaf's gradient).
///
/// Swift cannot copy an arbitrary class instance through an initialiser, so a replica is made the way Python's
/// `copy.copy` works: a new instance of the same class whose stored properties are copies of the original's
/// (read with the runtime's field metadata, as `ModuleReflection` does), then every submodule, parameter and
/// buffer is swapped for its replica: registered members, stored properties, optionals and arrays of them.
/// Other stored tensors are shared with the original, as in PyTorch. A `weak` property is nil in a replica;
/// `unowned` properties and properties of existential type that hold modules are not supported.
enum ModuleReplication {
    /// Replicas of `module` on each of `devices` (which must not include the module's own device: the caller
    /// runs the original there). Parameters get a gradient edge to their original when grad mode is on.
    static func replicate(_ module: nn.Module, on devices: [Device]) -> [nn.Module] {
        devices.map { device in
            var r = Replicator(device: device)
            return r.replica(of: module)
        }
    }

    /// One device's replication: memo tables keep shared modules and tied parameters shared in the replica.
    struct Replicator {
        let device: Device
        var modules: [ObjectIdentifier: nn.Module] = [:]
        var tensors: [ObjectIdentifier: Tensor] = [:]

        init(device: Device) { self.device = device }

        mutating func replica(of module: nn.Module) -> nn.Module {
            if let done = modules[ObjectIdentifier(module)] { return done }
            let copy = ModuleReplication.shallowCopy(module)
            modules[ObjectIdentifier(module)] = copy
            // Registered members (base-class dictionaries, copied by value: rebuild them with replicas).
            var params = OrderedDict<nn.Parameter>()
            for (k, p) in module.registeredParameters { params[k] = parameter(p) }
            copy.registeredParameters = params
            var buffers = OrderedDict<Tensor>()
            for (k, b) in module.registeredBuffers { buffers[k] = buffer(b) }
            copy.registeredBuffers = buffers
            var children = OrderedDict<nn.Module>()
            for (k, m) in module.registeredModules { children[k] = replica(of: m) }
            copy.registeredModules = children
            copy.arrayContainers = [:]
            // Stored properties, through the class's field layout.
            let layout = ModuleReflection.layout(for: type(of: module))
            let src = UnsafeRawPointer(Unmanaged.passUnretained(module).toOpaque())
            // A non-nil optional field is checked once (strong or weak) before use, as traversals do.
            for i in layout.fields.indices where !layout.fields[i].verified {
                let bits = src.load(fromByteOffset: layout.fields[i].offset, as: UInt.self)
                if bits != 0 { ModuleReflection.verify(layout, i, of: module, rawBits: bits) }
            }
            let dst = UnsafeMutableRawPointer(Unmanaged.passUnretained(copy).toOpaque())
            for i in layout.fields.indices {
                let f = layout.fields[i]
                let p = dst + f.offset
                switch f.kind {
                case .module:
                    let m = (src + f.offset).load(as: nn.Module.self)
                    let stored = (f.type as? nn.Module.Type)?.storeModule(replica(of: m), p) ?? false
                    precondition(stored, "DataParallel: cannot store the replica of \(module.typeName).\(f.name)")
                case .optionalModule(let field):
                    guard f.verified, let m = field.loadModule(src + f.offset) else { continue }
                    _ = field.storeModule(replica(of: m), p)
                case .moduleArray(let field):
                    let ms = field.loadModules(src + f.offset)
                    if ms.isEmpty { continue }
                    _ = field.storeModules(ms.map { replica(of: $0) }, p)
                case .tensor:
                    let t = (src + f.offset).load(as: Tensor.self)
                    if let r = mapped(t) { _ = (f.type as? Tensor.Type)?.storeTensor(r, p) }
                case .optionalTensor(let field):
                    guard f.verified, let t = field.loadTensor(src + f.offset), let r = mapped(t) else { continue }
                    _ = field.storeTensor(r, p)
                case .tensorArray(let field):
                    let ts = field.loadTensors(src + f.offset)
                    if ts.isEmpty { continue }
                    _ = field.storeTensors(ts.map { mapped($0) ?? $0 }, p)
                case .ignored:
                    continue
                }
            }
            // What the field layout cannot reach (a property of existential type) would still be the original's.
            for (name, p) in copy.namedParameters(recurse: false) where p.device != device {
                preconditionFailure("DataParallel: cannot replicate \(module.typeName).\(name) onto \(device): the parameter is "
                                    + "held where replication cannot reach it (a property of existential type); declare it "
                                    + "as nn.Parameter or register it with registerParameter(_:_:)")
            }
            return copy
        }

        /// The replica of a parameter or buffer met earlier, or of a parameter met now; nil for other tensors.
        private mutating func mapped(_ t: Tensor) -> Tensor? {
            if let r = tensors[ObjectIdentifier(t)] { return r }
            if let p = t as? nn.Parameter { return parameter(p) }
            return nil
        }

        /// `p` on this device as a parameter whose gradient flows to `p` (PyTorch's `BroadcastBackward`).
        private mutating func parameter(_ p: nn.Parameter) -> nn.Parameter {
            if let r = tensors[ObjectIdentifier(p)] as? nn.Parameter { return r }
            let data = p.detach().to(device)
            let r = nn.Parameter(data, requiresGrad: false)
            if p.needsGrad {
                let source = p.device
                record("BroadcastBackward", r, inputs: [p]) { _, g in [g.to(source)] }
            }
            tensors[ObjectIdentifier(p)] = r
            return r
        }

        /// A buffer copied to this device (not differentiable, as PyTorch's replicas of buffers in training).
        private mutating func buffer(_ b: Tensor) -> Tensor {
            if let r = tensors[ObjectIdentifier(b)] { return r }
            let r = b.detach().to(device)
            tensors[ObjectIdentifier(b)] = r
            return r
        }
    }

    // MARK: copying an instance

    /// The stored properties of one class (base class first): where each is and how to copy it.
    struct CopyField {
        let offset: Int
        let type: Any.Type
        let rawName: String
        /// An optional class reference, which may be `weak` (checked against Mirror when non-nil).
        let mayBeWeak: Bool
        let copier: FieldCopier.Type
    }

    final class CopyLayout {
        let fields: [CopyField]
        let instanceSize: Int
        let alignMask: Int
        /// Per field: nil until first seen non-nil, then whether it is a weak reference.
        var weak: [Bool?]
        init(fields: [CopyField], instanceSize: Int, alignMask: Int) {
            self.fields = fields
            self.instanceSize = instanceSize
            self.alignMask = alignMask
            weak = Array(repeating: nil, count: fields.count)
        }
    }

    nonisolated(unsafe) private static var copyLayouts: [ObjectIdentifier: CopyLayout] = [:]
    private static let lock = PosixLock()

    private static func copyLayout(_ cls: nn.Module.Type) -> CopyLayout {
        lock.lock()
        defer { lock.unlock() }
        if let l = copyLayouts[ObjectIdentifier(cls)] { return l }
        var fields: [CopyField] = []
        let ok = _forEachField(of: cls, options: [.classType]) { name, offset, type, _ in
            fields.append(CopyField(offset: offset, type: type, rawName: String(cString: name),
                                    mayBeWeak: type is OptionalObjectField.Type, copier: copier(for: type)))
            return true
        }
        precondition(ok, "DataParallel: cannot replicate \(cls): the runtime has no field metadata for its stored properties")
        // Class metadata (as in ModuleReflection): kind, superclass, (Objective-C runtimes: cache and data
        // words), flags, instance address point, then the instance size (32 bits) and alignment mask (16 bits).
        #if canImport(ObjectiveC)
        let sizeOffset = 48
        #else
        let sizeOffset = 24
        #endif
        let metadata = unsafeBitCast(cls, to: UnsafeRawPointer.self)
        let size = Int(metadata.load(fromByteOffset: sizeOffset, as: UInt32.self))
        let align = Int(metadata.load(fromByteOffset: sizeOffset + 4, as: UInt16.self))
        precondition(size >= 16 && size < 1 << 20 && fields.allSatisfy({ $0.offset >= 16 && $0.offset < size }),
                     "DataParallel: cannot replicate \(cls): unexpected class metadata (instance size \(size))")
        let l = CopyLayout(fields: fields, instanceSize: size, alignMask: align)
        copyLayouts[ObjectIdentifier(cls)] = l
        return l
    }

    /// A new instance of `module`'s class with copies of its stored properties (no initialiser runs).
    static func shallowCopy(_ module: nn.Module) -> nn.Module {
        let cls = type(of: module)
        let layout = copyLayout(cls)
        let raw = ct_alloc_object(unsafeBitCast(cls, to: UnsafeRawPointer.self), layout.instanceSize, layout.alignMask)!
        let src = UnsafeRawPointer(Unmanaged.passUnretained(module).toOpaque())
        for (i, f) in layout.fields.enumerated() {
            if f.mayBeWeak {
                let bits = src.load(fromByteOffset: f.offset, as: UInt.self)
                if bits == 0 { (raw + f.offset).storeBytes(of: 0, as: UInt.self); continue }
                if isWeak(layout, i, module, bits) { (raw + f.offset).storeBytes(of: 0, as: UInt.self); continue }
            }
            f.copier.copy(from: src + f.offset, to: raw + f.offset)
        }
        return Unmanaged<nn.Module>.fromOpaque(UnsafeRawPointer(raw)).takeRetainedValue()
    }

    /// Whether the optional class field `i` (holding `bits`) is `weak`: a strong or unowned field's raw bits
    /// are the object Mirror reports.
    private static func isWeak(_ layout: CopyLayout, _ i: Int, _ module: nn.Module, _ bits: UInt) -> Bool {
        lock.lock()
        let known = layout.weak[i]
        lock.unlock()
        if let known { return known }
        var matches = false
        var m: Mirror? = Mirror(reflecting: module)
        search: while let cur = m {
            for child in cur.children where child.label == layout.fields[i].rawName {
                if let obj = child.value as? AnyObject {
                    matches = UInt(bitPattern: Unmanaged.passUnretained(obj).toOpaque()) == bits
                }
                break search
            }
            m = cur.superclassMirror
        }
        lock.lock()
        layout.weak[i] = !matches
        lock.unlock()
        return !matches
    }

    /// The copier of values of `type` (its value witnesses: retains, copy-on-write buffers).
    private static func copier(for type: Any.Type) -> FieldCopier.Type {
        func make<T>(_: T.Type) -> FieldCopier.Type { TypedFieldCopier<T>.self }
        return _openExistential(type, do: make)
    }
}


/// Copies one stored property's value into uninitialised memory.
protocol FieldCopier {
    static func copy(from src: UnsafeRawPointer, to dst: UnsafeMutableRawPointer)
}
enum TypedFieldCopier<T>: FieldCopier {
    static func copy(from src: UnsafeRawPointer, to dst: UnsafeMutableRawPointer) {
        dst.initializeMemory(as: T.self, repeating: src.load(as: T.self), count: 1)
    }
}

/// Optionals of class type: the stored properties that may be `weak` references.
protocol OptionalObjectField {}
extension Optional: OptionalObjectField where Wrapped: AnyObject {}

extension Tensor {
    /// Stores `t` in a stored property whose static type is this class, when `t` is an instance of it.
    static func storeTensor(_ t: Tensor, _ p: UnsafeMutableRawPointer) -> Bool {
        guard let v = t as? Self else { return false }
        p.assumingMemoryBound(to: Self.self).pointee = v
        return true
    }
}
