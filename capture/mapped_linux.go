package capture

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapFile maps the first size bytes of f for reading.
func mapFile(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
}

// release gives data[from:to] back: the pages stay in the page cache, and
// reading them again maps them again.
func (m *mapping) release(from, to int) {
	_ = unix.Madvise(m.data[from:to], unix.MADV_DONTNEED)
}

func (m *mapping) unmap() {
	if m.data != nil {
		_ = unix.Munmap(m.data)
		m.data = nil
	}
}

// holds reports whether addr lies in the mapping.
func (m *mapping) holds(addr uintptr) bool {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	return addr >= base && addr-base < uintptr(len(m.data))
}
