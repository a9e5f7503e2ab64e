package mocker

// deque is a ring-buffer double-ended queue of requests (the waiting queue:
// arrivals at the back, preempted requests at the front).
type deque struct {
	buf        []*seq
	head, size int
}

func (d *deque) len() int { return d.size }

func (d *deque) grow() {
	if d.size < len(d.buf) {
		return
	}
	nb := make([]*seq, max(16, 2*len(d.buf)))
	for i := 0; i < d.size; i++ {
		nb[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(s *seq) {
	d.grow()
	d.buf[(d.head+d.size)%len(d.buf)] = s
	d.size++
}

func (d *deque) pushFront(s *seq) {
	d.grow()
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = s
	d.size++
}

func (d *deque) front() *seq { return d.buf[d.head] }

func (d *deque) at(i int) *seq { return d.buf[(d.head+i)%len(d.buf)] }

func (d *deque) popFront() *seq {
	s := d.buf[d.head]
	d.buf[d.head] = nil
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return s
}

// remove deletes s, keeping the order of the others; O(len).
func (d *deque) remove(s *seq) bool {
	for i := 0; i < d.size; i++ {
		if d.at(i) != s {
			continue
		}
		for j := i; j < d.size-1; j++ {
			d.buf[(d.head+j)%len(d.buf)] = d.at(j + 1)
		}
		d.buf[(d.head+d.size-1)%len(d.buf)] = nil
		d.size--
		return true
	}
	return false
}
