@_spi(Reflection) import Swift
#if canImport(Glibc)
import Glibc
#endif

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
        let offset: Int
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
        var chain: [AnyClass] = []
        var c: AnyClass? = type
        while let cur = c, ObjectIdentifier(cur) != ObjectIdentifier(nn.Module.self) {
            chain.append(cur)
            c = _getSuperclass(cur)
        }
        var fields: [Field] = []
        var needsMirror = false
        for cls in chain.reversed() {
            let ok = _forEachField(of: cls, options: [.classType]) { namePointer, offset, fieldType, kind in
                let raw = String(cString: namePointer)
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
                    fields.append(Field(name: name, rawName: raw, offset: offset, kind: fk, verified: !needsCheck))
                }
                return true
            }
            if !ok { needsMirror = true }
        }
        return Layout(fields: fields, usesMirror: needsMirror)
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
}
extension Optional: OptionalModuleField where Wrapped: nn.Module {
    static func loadModule(_ p: UnsafeRawPointer) -> nn.Module? { p.load(as: Self.self) }
}

protocol OptionalTensorField {
    static func loadTensor(_ p: UnsafeRawPointer) -> Tensor?
}
extension Optional: OptionalTensorField where Wrapped: Tensor {
    static func loadTensor(_ p: UnsafeRawPointer) -> Tensor? { p.load(as: Self.self) }
}

protocol ModuleArrayField {
    static func loadModules(_ p: UnsafeRawPointer) -> [nn.Module]
}
extension Array: ModuleArrayField where Element: nn.Module {
    static func loadModules(_ p: UnsafeRawPointer) -> [nn.Module] { p.load(as: Self.self).map { $0 } }
}

protocol TensorArrayField {
    static func loadTensors(_ p: UnsafeRawPointer) -> [Tensor]
}
extension Array: TensorArrayField where Element: Tensor {
    static func loadTensors(_ p: UnsafeRawPointer) -> [Tensor] { p.load(as: Self.self).map { $0 } }
}
