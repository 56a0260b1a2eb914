package sharding

// crcTable is CRC16-CCITT (XMODEM), the polynomial Redis Cluster uses for slots.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// SlotCount is the number of hash slots of a Redis Cluster.
const SlotCount = 16384

func crc16[K ~string | ~[]byte](b K) uint16 {
	var c uint16
	for i := 0; i < len(b); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^b[i]]
	}
	return c
}

// Slot returns the Redis Cluster hash slot of key, honouring a {hash tag} the way
// CLUSTER KEYSLOT does: the first '{' with a non-empty run before the next '}'.
func Slot[K ~string | ~[]byte](key K) uint16 {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j > i+1 {
						key = key[i+1 : j]
					}
					return crc16(key) & (SlotCount - 1)
				}
			}
			break
		}
	}
	return crc16(key) & (SlotCount - 1)
}
