@_spi(Reflection) import Swift
/// Fast discovery of a module's stored submodules and parameters.
///
/// `Mirror` costs about 3 µs per stored property, which would make `parameters()` or
/// `zeroGrad()` cost hundreds of microseconds on a small network. Instead, each module class's
/// stored properties are listed once with the runtime's field metadata (name, offset, static
/// type); later traversals read the relevant fields straight from the instance. Classes with an
/// existential-typed property (`any P`, `Any`), which static types cannot classify, fall back to
/// `Mirror`.
enum ModuleReflection {
    /// What a stored property can hold.
    enum FieldKind {
        case module
        case optionalModule(OptionalModuleField.Type)
        case tensor
        case optionalTensor(OptionalTensorField.Type)
        case moduleArray(ModuleArrayField.Type)
        case tensorArray(TensorArrayField.Type)
        /// A `weak` reference (detected on first use): never registered.
        case ignored
    }

    struct Field {
        /// The property name (lazy-storage prefix removed).
        let name: String
        /// The field's name in the runtime metadata (and in Mirror labels).
        let rawName: String
        /// Its position among all the class's stored properties (base class first).
        let index: Int
        let offset: Int
        /// The property's static type.
        let type: Any.Type
        /// Whether it is a `var` (nil where the class's field descriptor could not be read):
        /// only a `var` may be rewritten in place (`nn.Module.replaceChildren`).
        var isVar: Bool?
        var kind: FieldKind
        /// Optional class fields are checked once against Mirror when first non-nil, because a
        /// `weak` reference has the same static type but a different storage layout.
        var verified: Bool
    }

    /// The registrable fields of one class (base-class fields first).
    final class Layout {
        var fields: [Field]
        let usesMirror: Bool
        init(fields: [Field], usesMirror: Bool) {
            self.fields = fields
            self.usesMirror = usesMirror
        }
    }

    nonisolated(unsafe) private static var layouts: [ObjectIdentifier: Layout] = [:]
    nonisolated(unsafe) private static let lock: UnsafeMutablePointer<pthread_mutex_t> = {
        let p = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(p, nil)
        return p
    }()

    @inline(__always) static func withLock<R>(_ body: () -> R) -> R {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body()
    }

    /// The cached layout of `type`, built on first use.
    static func layout(for type: nn.Module.Type) -> Layout {
        let key = ObjectIdentifier(type)
        if let l = withLock({ layouts[key] }) { return l }
        let l = build(type)
        return withLock {
            if let existing = layouts[key] { return existing }
            layouts[key] = l
            return l
        }
    }

    private static func build(_ type: nn.Module.Type) -> Layout {
        var fields: [Field] = []
        var rawNames: [String] = []
        var needsMirror = false
        // `_forEachField` on a class visits its superclasses' fields too, base class first.
        let ok = _forEachField(of: type, options: [.classType]) { namePointer, offset, fieldType, kind in
            let raw = String(cString: namePointer)
            rawNames.append(raw)
            var name = raw
            if name.hasPrefix(lazyStoragePrefix) { name.removeFirst(lazyStoragePrefix.count) }
            if kind == .existential || kind == .existentialMetatype {
                needsMirror = true
                return true
            }
            let fk: FieldKind?
            if fieldType is nn.Module.Type {
                fk = .module
            } else if fieldType is Tensor.Type {
                fk = .tensor
            } else if let t = fieldType as? OptionalModuleField.Type {
                fk = .optionalModule(t)
            } else if let t = fieldType as? OptionalTensorField.Type {
                fk = .optionalTensor(t)
            } else if let t = fieldType as? ModuleArrayField.Type {
                fk = .moduleArray(t)
            } else if let t = fieldType as? TensorArrayField.Type {
                fk = .tensorArray(t)
            } else {
                fk = nil
            }
            if let fk {
                let needsCheck: Bool
                switch fk {
                case .optionalModule, .optionalTensor: needsCheck = true
                default: needsCheck = false
                }
                fields.append(Field(name: name, rawName: raw, index: rawNames.count - 1, offset: offset, type: fieldType,
                                    isVar: nil, kind: fk, verified: !needsCheck))
            }
            return true
        }
        if !ok { needsMirror = true }
        if let mutable = storedPropertyMutability(of: type, expectedNames: rawNames) {
            for i in fields.indices { fields[i].isVar = mutable[fields[i].index] }
        }
        return Layout(fields: fields, usesMirror: needsMirror)
    }

    /// Whether each stored property of `type` is a `var`, base class first (`_forEachField`'s
    /// order), read from the classes' reflection field descriptors (the records' `isVar` flag),
    /// which `_forEachField` does not report. Nil unless the records' names are exactly
    /// `expectedNames`, so a metadata layout this code does not know is never trusted.
    static func storedPropertyMutability(of type: AnyClass, expectedNames: [String]) -> [Bool]? {
        var chain: [AnyClass] = []
        var c: AnyClass? = type
        while let cur = c {
            chain.append(cur)
            c = _getSuperclass(cur)
        }
        var names: [String] = [], flags: [Bool] = []
        for cls in chain.reversed() {
            guard let own = declaredFieldMutability(of: cls) else { return nil }
            names += own.map(\.name)
            flags += own.map(\.isVar)
        }
        return names == expectedNames ? flags : nil
    }

    /// The stored properties `cls` itself declares, with whether each is a `var`, from its field
    /// descriptor; nil where the metadata cannot be read.
    private static func declaredFieldMutability(of cls: AnyClass) -> [(name: String, isVar: Bool)]? {
        // Class metadata: kind, superclass, (Objective-C runtimes: cache and data words), then
        // flags, instance address point, size, alignment mask, reserved, class size and address
        // point (24 bytes in all) before the nominal type descriptor.
        #if canImport(ObjectiveC)
        let descriptorOffset = 64
        #else
        let descriptorOffset = 40
        #endif
        let metadata = unsafeBitCast(cls, to: UnsafeRawPointer.self)
        guard let descriptor = metadata.load(fromByteOffset: descriptorOffset, as: UnsafeRawPointer?.self) else { return nil }
        /// The target of the 32-bit relative pointer at `base + offset`.
        func target(_ base: UnsafeRawPointer, _ offset: Int) -> UnsafeRawPointer? {
            let rel = base.load(fromByteOffset: offset, as: Int32.self)
            return rel == 0 ? nil : base + offset + Int(rel)
        }
        // Type context descriptor: flags, parent, name, access function, then the field descriptor;
        // that has mangled type name, superclass, kind (16 bits), record size (16), count (32), records.
        // No descriptor: no fields recorded (a class with stored properties but no reflection
        // metadata then fails the name comparison).
        guard let fieldDescriptor = target(descriptor, 16) else { return [] }
        let recordSize = Int(fieldDescriptor.load(fromByteOffset: 10, as: UInt16.self))
        let count = Int(fieldDescriptor.load(fromByteOffset: 12, as: UInt32.self))
        guard recordSize >= 12 else { return nil }
        var result: [(name: String, isVar: Bool)] = []
        for i in 0..<count {
            // A record: flags (0x2: var), mangled type name, field name.
            let record = fieldDescriptor + 16 + i * recordSize
            guard let name = target(record, 8) else { return nil }
            result.append((String(cString: name.assumingMemoryBound(to: CChar.self)), record.load(as: UInt32.self) & 0x2 != 0))
        }
        return result
    }

    /// Checks (once) that an optional class field holds a strong or unowned reference, by
    /// comparing its raw bits with the object Mirror reports; a `weak` field is marked ignored.
    static func verify(_ layout: Layout, _ index: Int, of instance: nn.Module, rawBits: UInt) {
        let field = layout.fields[index]
        var matches = false
        var m: Mirror? = Mirror(reflecting: instance)
        search: while let cur = m {
            for child in cur.children where child.label == field.rawName {
                if let obj = child.value as? AnyObject {
                    matches = UInt(bitPattern: Unmanaged.passUnretained(obj).toOpaque()) == rawBits
                }
                break search
            }
            m = cur.superclassMirror
        }
        withLock {
            if matches { layout.fields[index].verified = true } else {
                layout.fields[index].kind = .ignored
                layout.fields[index].verified = true
            }
        }
    }
}

/// Swift's prefix on the backing storage of `lazy var`s.
let lazyStoragePrefix = "$__lazy_storage_$_"

// Loaders for the property types that hold modules or parameters, chosen once per field from
// its static type.

protocol OptionalModuleField {
    static func loadModule(_ p: UnsafeRawPointer) -> nn.Module?
    /// Stores `module` in the field when its type can hold it; false otherwise.
    static func storeModule(_ module: nn.Module, _ p: UnsafeMutableRawPointer) -> Bool
}
extension Optional: OptionalModuleField where Wrapped: nn.Module {
    static func loadModule(_ p: UnsafeRawPointer) -> nn.Module? { p.load(as: Self.self) }
    static func storeModule(_ module: nn.Module, _ p: UnsafeMutableRawPointer) -> Bool {
        guard let m = module as? Wrapped else { return false }
        p.assumingMemoryBound(to: Self.self).pointee = m
        return true
    }
}

extension nn.Module {
    /// Stores `module` in a stored property whose static type is this class, when `module` is an
    /// instance of it; false otherwise.
    static func storeModule(_ module: nn.Module, _ p: UnsafeMutableRawPointer) -> Bool {
        guard let m = module as? Self else { return false }
        p.assumingMemoryBound(to: Self.self).pointee = m
        return true
    }
}

protocol OptionalTensorField {
    static func loadTensor(_ p: UnsafeRawPointer) -> Tensor?
    /// Stores `tensor` in the field when its type can hold it; false otherwise.
    static func storeTensor(_ tensor: Tensor, _ p: UnsafeMutableRawPointer) -> Bool
}
extension Optional: OptionalTensorField where Wrapped: Tensor {
    static func loadTensor(_ p: UnsafeRawPointer) -> Tensor? { p.load(as: Self.self) }
    static func storeTensor(_ tensor: Tensor, _ p: UnsafeMutableRawPointer) -> Bool {
        guard let t = tensor as? Wrapped else { return false }
        p.assumingMemoryBound(to: Self.self).pointee = t
        return true
    }
}

protocol ModuleArrayField {
    static func loadModules(_ p: UnsafeRawPointer) -> [nn.Module]
    /// Stores `modules` in the array field when its element type can hold every one; false otherwise.
    static func storeModules(_ modules: [nn.Module], _ p: UnsafeMutableRawPointer) -> Bool
    /// The element type's name, for messages.
    static var elementTypeName: String { get }
}
extension Array: ModuleArrayField where Element: nn.Module {
    static func loadModules(_ p: UnsafeRawPointer) -> [nn.Module] { p.load(as: Self.self).map { $0 } }
    static func storeModules(_ modules: [nn.Module], _ p: UnsafeMutableRawPointer) -> Bool {
        // A conditional cast of the whole array checks every element, as a loop would.
        guard let typed = modules as? [Element] else { return false }
        p.assumingMemoryBound(to: Self.self).pointee = typed
        return true
    }
    static var elementTypeName: String { String(describing: Element.self) }
}

protocol TensorArrayField {
    static func loadTensors(_ p: UnsafeRawPointer) -> [Tensor]
    /// Stores `tensors` in the array field when its element type can hold every one; false otherwise.
    static func storeTensors(_ tensors: [Tensor], _ p: UnsafeMutableRawPointer) -> Bool
}
extension Array: TensorArrayField where Element: Tensor {
    static func loadTensors(_ p: UnsafeRawPointer) -> [Tensor] { p.load(as: Self.self).map { $0 } }
    static func storeTensors(_ tensors: [Tensor], _ p: UnsafeMutableRawPointer) -> Bool {
        // A conditional cast of the whole array checks every element, as a loop would.
        guard let typed = tensors as? [Element] else { return false }
        p.assumingMemoryBound(to: Self.self).pointee = typed
        return true
    }
}
