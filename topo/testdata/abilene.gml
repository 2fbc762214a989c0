# An Abilene-like backbone written for hymn's tests (public city coordinates).
graph [
  directed 0
  Network "AbileneLike"
  node [
    id 0
    label "New York"
    Longitude -74.00597
    Internal 1
    Latitude 40.71427
  ]
  node [
    id 1
    label "Chicago"
    Longitude -87.65005
    Internal 1
    Latitude 41.85003
  ]
  node [
    id 2
    label "Washington DC"
    Longitude -77.03637
    Internal 1
    Latitude 38.89511
  ]
  node [
    id 3
    label "Seattle"
    Longitude -122.33207
    Internal 1
    Latitude 47.60621
  ]
  node [
    id 4
    label "Sunnyvale"
    Longitude -122.03635
    Internal 1
    Latitude 37.36883
  ]
  node [
    id 5
    label "Los Angeles"
    Longitude -118.24368
    Internal 1
    Latitude 34.05223
  ]
  node [
    id 6
    label "Denver"
    Longitude -104.9847
    Internal 1
    Latitude 39.73915
  ]
  node [
    id 7
    label "Kansas City"
    Longitude -94.57857
    Internal 1
    Latitude 39.09973
  ]
  node [
    id 8
    label "Houston"
    Longitude -95.36327
    Internal 1
    Latitude 29.76328
  ]
  node [
    id 9
    label "Atlanta"
    Longitude -84.38798
    Internal 1
    Latitude 33.749
  ]
  node [
    id 10
    label "Indianapolis"
    Longitude -86.15804
    Internal 1
    Latitude 39.76838
  ]
  edge [
    source 0
    target 1
    LinkSpeed "9.92"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 9920000000.0
  ]
  edge [
    source 0
    target 2
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 1
    target 10
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 2
    target 9
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 3
    target 4
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 3
    target 6
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 4
    target 5
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 4
    target 6
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 5
    target 8
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 6
    target 7
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 7
    target 8
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 7
    target 10
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 8
    target 9
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
  edge [
    source 9
    target 10
    LinkSpeed "10"
    LinkLabel "OC-192"
    LinkSpeedUnits "G"
    LinkSpeedRaw 10000000000.0
  ]
]
