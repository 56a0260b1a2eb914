package drawverify

import "flashsale/sharding/sale"

// PublishedOf is publishedOf, for the external tests.
var PublishedOf = publishedOf

// CompareDescription is DrawVerified.compareDescription, for the external tests.
func (r *DrawVerified) CompareDescription(s *sale.Sale, err error) { r.compareDescription(s, err) }
