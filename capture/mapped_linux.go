package capture

import (
	"os"
	"syscall"
	"unsafe"
)

// mapFile maps the first size bytes of f for reading.
func mapFile(f *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
}

// release gives data[from:to] back: the pages stay in the page cache, and
// reading them again maps them again.
func (m *mapping) release(from, to int) {
	_ = syscall.Madvise(m.data[from:to], syscall.MADV_DONTNEED)
}

// unmap ends the mapping.
func (m *mapping) unmap() {
	if m.data != nil {
		_ = syscall.Munmap(m.data)
		m.data = nil
	}
}

// holds reports whether addr lies in the mapping.
func (m *mapping) holds(addr uintptr) bool {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	return addr >= base && addr-base < uintptr(len(m.data))
}
