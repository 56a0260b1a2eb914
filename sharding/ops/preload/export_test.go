package preload

// PlacePreload is placePreload, for the external tests.
var PlacePreload = placePreload
